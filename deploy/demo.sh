#!/usr/bin/env bash
# `make demo`: a 2-node local cluster with 4 fake GPUs per node, three example jobs,
# what squeue/sinfo/sacct show, why the big one waits (slurmlite explain), what the GPU job used (seff), then the cluster is stopped (KEEP=1 keeps it running).
set -euo pipefail
DIR=${DEMO_DIR:-$PWD/demo-cluster}

# fake GPUs show what this file says (slurmlite/fakegpu.py): GPU 0 of each node busy, the others idle
mkdir -p "$DIR"
export SLURMLITE_FAKE_GPU_STATE="$DIR/fake-gpus.json"
echo '{"0": {"util": 85, "mem_used_mib": 20480, "power_mw": 310000}}' >"$SLURMLITE_FAKE_GPU_STATE"

slurmlite cluster up --dir "$DIR" --nodelist 'node[1-2]' --cpus-per-node 4 --gpus-per-node 4 \
    --gpu-type a100 --mem-per-node 8000
stop() {
  if [ -n "${KEEP:-}" ]; then
    echo; echo "cluster kept running: 'source $DIR/env' to use it, 'slurmlite cluster down --dir $DIR' to stop it"
  else
    echo; slurmlite cluster down --dir "$DIR"
  fi
}
trap stop EXIT
export SLURM_CONF="$DIR/slurm.conf"
mkdir -p "$DIR/jobs" && cd "$DIR/jobs"

say() { printf '\n\033[1m$ %s\033[0m\n' "$*"; }
run() { say "$*"; "$@"; }

run sinfo
cpu=$(sbatch --parsable --job-name=cpu-job --time=5 --wrap 'echo "hello from $SLURMD_NODENAME (job $SLURM_JOB_ID)"; sleep 3')
say "sbatch --job-name=cpu-job ...  -> job $cpu"
gpu=$(sbatch --parsable --job-name=gpu-job --gres=gpu:2 --time=5 --wrap 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES on $SLURMD_NODENAME"; sleep 3')
say "sbatch --job-name=gpu-job --gres=gpu:2 ...  -> job $gpu"
big=$(sbatch --parsable --job-name=big-job -N 2 --exclusive --time=5 --wrap 'echo "both nodes at once: $SLURM_JOB_NODELIST"')
say "sbatch --job-name=big-job -N 2 --exclusive ...  -> job $big (waits for resources)"
sleep 1
run squeue
run sinfo
# the backfill pass (every second here) plans the waiting job: when and where it will start
for _ in $(seq 40); do
  [ "$(squeue -h -j "$big" -o %S)" != "N/A" ] && break
  sleep 0.25
done
run squeue --start
run slurmlite explain "$big"
say "waiting for the queue to drain"
for _ in $(seq 120); do
  [ -z "$(squeue -h -o %i)" ] && break
  sleep 0.5
done
run squeue
run sacct -j "$cpu,$gpu,$big"
for id in "$cpu" "$gpu" "$big"; do run cat "slurm-$id.out"; done
# what the GPU job used of what it held (the agents sample every job; docs/efficiency.md)
run seff "$gpu"
# a job step over both nodes, with the rank variables torch's env:// rendezvous reads
run srun -N2 --ntasks-per-node=2 -l bash -c \
  'echo "rank $RANK of $WORLD_SIZE on $SLURMD_NODENAME, rendezvous at $MASTER_ADDR:$MASTER_PORT"'
