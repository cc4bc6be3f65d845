#!/usr/bin/env python3
"""One rank of the real-NCCL check (scripts/nccl-gpu-check.sh starts two).

Runs PyTorch's NCCL backend on GPU tensors: allreduce, allgather, reduce-scatter and
broadcast across sizes, every result compared with the value computed on the host, then
times each point the way nccl-tests does (algbw = bytes / time, busbw with nccl-tests'
factors; the time is the slowest rank's). With --types it also runs allreduce for every
dtype PyTorch maps to an NCCL type with sum, prod, max and min, on counts that do not fill
NCCL's chunks (so a CollNet sees padded tails). Rank 0 writes one JSON object per measured point to --json.

The two ranks rendezvous through a FileStore (no port to pick). Exit status 0 when every
result was right, 1 when any was wrong, 2 on a setup error.
"""
import argparse
import json
import os
import sys
import time


def parse_size(text):
    units = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
    t = text.strip().upper().rstrip("B")
    num = t.rstrip("KMG")
    return int(num) * units[t[len(num):]]


def sizes_between(lo, hi, factor):
    out = []
    s = lo
    while s <= hi:
        out.append(s)
        s *= factor
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, default=2)
    ap.add_argument("--store", required=True, help="FileStore path shared by the ranks")
    ap.add_argument("--mode", default="plain")
    ap.add_argument("-b", default="8")
    ap.add_argument("-e", default="64M")
    ap.add_argument("-f", type=int, default=8)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--colls", default="all_reduce,all_gather,reduce_scatter,broadcast")
    ap.add_argument("--types", action="store_true", help="also every dtype x op for allreduce")
    ap.add_argument("--json", default="")
    args = ap.parse_args()

    import torch
    import torch.distributed as dist

    if not torch.cuda.is_available():
        print("rank %d: no CUDA device" % args.rank, file=sys.stderr)
        return 2
    torch.cuda.set_device(0)
    dev = torch.device("cuda", 0)
    kw = dict(backend="nccl", init_method="file://" + args.store, rank=args.rank,
              world_size=args.world)
    try:
        dist.init_process_group(device_id=dev, **kw)   # eager NCCL init (torch >= 2.3)
    except TypeError:
        dist.init_process_group(**kw)
    world, rank = args.world, args.rank
    if rank == 0:
        print("torch %s, NCCL %s, %s" % (torch.__version__,
              ".".join(str(v) for v in torch.cuda.nccl.version()),
              torch.cuda.get_device_name(0)), flush=True)

    records = []
    wrong_total = 0

    def pattern(n, r, dtype):
        # Small integers, exact in every type down to fp8 (sums of two ranks stay <= 8).
        i = torch.arange(n, device=dev, dtype=torch.int64)
        return ((i % 3) + r).to(dtype)

    def run_point(coll, nbytes, dtype=torch.float32):
        es = torch.tensor([], dtype=dtype).element_size()
        if coll in ("all_gather", "reduce_scatter"):
            count = max(1, nbytes // es // world)   # per-rank count; nccl-tests' size is the total
        else:
            count = max(1, nbytes // es)
        if coll == "all_reduce":
            x = pattern(count, rank, dtype)
            expect = sum(pattern(count, r, dtype).to(torch.float64) for r in range(world))

            def op():
                y = x.clone()
                dist.all_reduce(y)
                return y
            check_x = x
        elif coll == "all_gather":
            x = pattern(count, rank, dtype)
            out = torch.empty(count * world, device=dev, dtype=dtype)
            expect = torch.cat([pattern(count, r, dtype).to(torch.float64) for r in range(world)])

            def op():
                dist.all_gather_into_tensor(out, x)
                return out
            check_x = x
        elif coll == "reduce_scatter":
            x = pattern(count * world, rank, dtype)
            out = torch.empty(count, device=dev, dtype=dtype)
            full = sum(pattern(count * world, r, dtype).to(torch.float64) for r in range(world))
            expect = full[rank * count:(rank + 1) * count]

            def op():
                dist.reduce_scatter_tensor(out, x)
                return out
            check_x = x
        elif coll == "broadcast":
            x = pattern(count, 7, dtype) if rank == 0 else torch.zeros(count, device=dev, dtype=dtype)
            expect = pattern(count, 7, dtype).to(torch.float64)

            def op():
                dist.broadcast(x, src=0)
                return x
            check_x = x
        else:
            raise ValueError(coll)
        y = op()
        torch.cuda.synchronize()
        wrong = int((y.to(torch.float64) != expect).sum().item())
        for _ in range(args.warmup):
            op()
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(args.iters):
            op()
        torch.cuda.synchronize()
        us = (time.perf_counter() - t0) * 1e6 / args.iters
        # The slowest rank's time, as the job sees it (a broadcast root finishes early).
        t = torch.tensor([us], device=dev, dtype=torch.float64)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        us = float(t.item())
        total = count * es * (world if coll in ("all_gather", "reduce_scatter") else 1)
        algbw = total / us / 1e3
        factor = {"all_reduce": 2.0 * (world - 1) / world, "all_gather": (world - 1) / world,
                  "reduce_scatter": (world - 1) / world, "broadcast": 1.0}[coll]
        del check_x
        return dict(mode=args.mode, coll=coll, bytes=total, count=count, type=str(dtype),
                    time_us=us, algbw=algbw, busbw=algbw * factor, wrong=wrong)

    if rank == 0:
        print("%-8s %-15s %12s %12s %10s %8s %8s %7s" % ("mode", "collective", "size(B)",
              "count", "time(us)", "algbw", "busbw", "#wrong"), flush=True)
    sizes = sizes_between(parse_size(args.b), parse_size(args.e), args.f)
    for coll in [c for c in args.colls.split(",") if c]:
        for nbytes in sizes:
            rec = run_point(coll, nbytes)
            # Every rank checked its own output; the worst count wins.
            w = torch.tensor([rec["wrong"]], device=dev)
            dist.all_reduce(w, op=dist.ReduceOp.MAX)
            rec["wrong"] = int(w.item())
            wrong_total += rec["wrong"]
            records.append(rec)
            if rank == 0:
                print("%-8s %-15s %12d %12d %10.1f %8.3f %8.3f %7d" % (rec["mode"], coll,
                      rec["bytes"], rec["count"], rec["time_us"], rec["algbw"], rec["busbw"],
                      rec["wrong"]), flush=True)

    if args.types:
        type_names = ["int8", "uint8", "int32", "int64", "float16", "float32", "float64",
                      "bfloat16", "float8_e4m3fn", "float8_e5m2", "uint32", "uint64"]
        ops = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT,
               "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}
        # Counts that leave NCCL's 512-byte grains and CollNet chunks partly filled.
        counts = [1, 1000, 131072 + 17, (1 << 21) + 3]
        if rank == 0:
            print("allreduce by type and op, counts %s:" % counts, flush=True)
        for tn in type_names:
            dtype = getattr(torch, tn, None)
            if dtype is None:
                if rank == 0:
                    print("  %-14s not in this torch" % tn, flush=True)
                continue
            results = []
            for on, op in ops.items():
                bad = 0
                try:
                    for n in counts:
                        i = torch.arange(n, device=dev, dtype=torch.int64)
                        vals = [((i + r) % 2 + 1) if on == "prod" else ((i % 3) + r)
                                for r in range(world)]
                        x = vals[rank].to(dtype)
                        dist.all_reduce(x, op=op)
                        stack = torch.stack([v.to(torch.float64) for v in vals])
                        ref = {"sum": stack.sum(0), "prod": stack.prod(0),
                               "max": stack.max(0).values, "min": stack.min(0).values}[on]
                        bad += int((x.to(torch.float64) != ref).sum().item())
                    torch.cuda.synchronize()
                    w = torch.tensor([bad], device=dev)
                    dist.all_reduce(w, op=dist.ReduceOp.MAX)
                    bad = int(w.item())
                    wrong_total += bad
                    results.append("%s %s" % (on, "ok" if bad == 0 else "%d WRONG" % bad))
                    records.append(dict(mode=args.mode, coll="all_reduce_types", type=tn, op=on,
                                        wrong=bad))
                except (RuntimeError, TypeError) as exc:
                    # PyTorch refuses some dtype/op pairs before NCCL sees them; say so.
                    msg = str(exc).splitlines()[0][:60]
                    results.append("%s refused by torch (%s)" % (on, msg))
                    torch.cuda.synchronize()
            if rank == 0:
                print("  %-14s %s" % (tn, "; ".join(results)), flush=True)

    dist.barrier()
    if rank == 0 and args.json:
        with open(args.json, "w") as fh:
            for rec in records:
                fh.write(json.dumps(rec) + "\n")
    dist.destroy_process_group()
    if rank == 0:
        print("rank 0: %s, %d wrong element(s)" % ("PASS" if wrong_total == 0 else "FAIL",
              wrong_total), flush=True)
    return 0 if wrong_total == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
