"""The training script of the migration pair: one process per GPU, started by torchrun.

Instead of training it does what a first step of distributed training does:
joins the process group and sums one number over every process.  With NCCL
when CUDA is there, gloo on CPUs (the test cluster's GPUs are fake).
"""

import os

import torch
import torch.distributed as dist


def main() -> None:
    backend = "nccl" if torch.cuda.is_available() else "gloo"
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    local = int(os.environ.get("LOCAL_RANK", "0"))
    if backend == "nccl":
        torch.cuda.set_device(local)
    t = torch.ones(1, device="cuda" if backend == "nccl" else "cpu")
    dist.all_reduce(t)
    if rank == 0:
        print(f"world size {world}, all_reduce sum {int(t.item())}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
