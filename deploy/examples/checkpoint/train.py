"""A small PyTorch training loop that survives preemption, time limits and dead nodes.

It fits a linear model on CPU (no GPU, no numpy needed) and keeps its whole
state -- model, optimizer, step -- in one checkpoint file:

* every ``--every`` steps it saves (written to a temporary name, then
  renamed, so a crash mid-save leaves the previous checkpoint whole);
* on SIGUSR1 (``sbatch --signal=USR1@60``: a minute before the time limit)
  it saves, asks for its own requeue (``scontrol requeue $SLURM_JOB_ID``)
  and exits; the next run of the job resumes from that step;
* on SIGTERM (``scancel``, a requeue by an admin, the time limit itself) it
  saves and exits without asking for anything;
* when it starts it resumes from the checkpoint if there is one, so a run
  killed with no warning at all (its node died; the job was requeued onto
  another node) loses only the steps since the last periodic save.

Each line it prints says which run (``SLURM_RESTART_COUNT``) did what, so
with ``--open-mode=append`` the job's output file tells the whole story.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

caught: list[int] = []  # signals received, handled between two steps


def _note(signum: int, _frame: object) -> None:
    caught.append(signum)


# before the slow import of torch: a warning that came early must not kill the run
signal.signal(signal.SIGUSR1, _note)
signal.signal(signal.SIGTERM, _note)

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # torch without numpy
import torch  # noqa: E402

RUN = int(os.environ.get("SLURM_RESTART_COUNT", "0"))


def say(text: str) -> None:
    print(f"run={RUN} {text}", flush=True)


def save(path: Path, step: int, model: torch.nn.Module, opt: torch.optim.Optimizer) -> None:
    tmp = path.with_suffix(".tmp")
    torch.save({"step": step, "model": model.state_dict(), "opt": opt.state_dict()}, tmp)
    os.replace(tmp, path)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", type=Path, required=True, help="where the checkpoint lives")
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--every", type=int, default=50, help="save every this many steps")
    ap.add_argument("--step-seconds", type=float, default=0.0, help="pretend steps are slow")
    args = ap.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    ckpt = args.dir / "checkpoint.pt"

    torch.manual_seed(0)
    x = torch.randn(256, 4)
    y = x @ torch.tensor([[1.0, -2.0, 3.0, 0.5]]).T + 0.25
    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    step = 0
    if ckpt.exists():
        state = torch.load(ckpt)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["opt"])
        step = state["step"]
    say(f"start step={step} node={os.environ.get('SLURMD_NODENAME', os.uname().nodename)}")

    while step < args.steps:
        if caught:
            save(ckpt, step, model, opt)
            if caught[0] == signal.SIGUSR1:
                say(f"warned: saved step={step}, requeueing")
                job = os.environ["SLURM_JOB_ID"]
                # the requeue terminates this run, scontrol itself perhaps included
                done = subprocess.run(["scontrol", "requeue", job]).returncode
                if done not in (0, -signal.SIGTERM):
                    say(f"scontrol requeue failed (exit {done}): the job ends here")
                    return 1
            else:
                say(f"terminated: saved step={step}")
            return 0
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        if step % args.every == 0:
            save(ckpt, step, model, opt)
            say(f"saved step={step} loss={loss.item():.4f}")
        time.sleep(args.step_seconds)
    save(ckpt, step, model, opt)
    say(f"done step={step} loss={loss.item():.6f}")
    return 0


if __name__ == "__main__":
    status = main()
    # a signal that comes now, after the work (a warning just too late), must not kill the
    # run: the interpreter's shutdown puts default handlers back, except for ignored ones
    signal.signal(signal.SIGUSR1, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sys.exit(status)
