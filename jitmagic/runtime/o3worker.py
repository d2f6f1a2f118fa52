"""The full tier's compiler, in a child process: LLVM IR text in, optimised IR and object code
out (the same object the disk cache stores, linked by engine.load_object).

Why a process: llvmlite serialises every LLVM call of a process behind one lock, so an O3
compile in a background thread made every foreground compile wait for it (on the kernel
suite each new kernel's first call paid the previous kernel's O3, up to 2 s). This file is run
as a script and imports only llvmlite, so the child starts in about 0.1 s.

Protocol (binary pipes): the parent first sends a JSON line {cpu, features, triple, layout},
then per request an 8-byte little-endian length and the IR text; the child answers with a
status byte (0 ok, 1 error), then length-prefixed fields: ok -> JSON timings, optimised IR,
object code; error -> the message.
"""

import json
import struct
import sys
import time

from jitmagic.runtime import engine


def _read_exact(f, n):
    buf = b""
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def _send(f, *fields):
    for data in fields:
        f.write(struct.pack("<Q", len(data)))
        f.write(data)


def compile_object(llvm, tm, triple, layout, text):
    t0 = time.perf_counter()
    mod = llvm.parse_assembly(text)
    mod.triple, mod.data_layout = triple, layout
    pto = llvm.create_pipeline_tuning_options(speed_level=3)
    pto.loop_vectorization = pto.slp_vectorization = True
    pto.loop_unrolling = True
    pb = llvm.create_pass_builder(tm, pto)
    pm = pb.getModulePassManager()
    pm.run(mod, pb)
    optimized = str(mod)
    t1 = time.perf_counter()
    obj = tm.emit_object(mod)
    t2 = time.perf_counter()
    return {"llvm_opt": t1 - t0, "codegen": t2 - t1}, optimized, obj


def main():
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    inp, out = sys.stdin.buffer, sys.stdout.buffer
    host = json.loads(inp.readline())
    tm = llvm.Target.from_default_triple().create_target_machine(
        cpu=host["cpu"],
        features=host["features"],
        opt=3,
        reloc="default",
        codemodel="jitdefault",
        jit=True,
    )
    while True:
        try:
            (n,) = struct.unpack("<Q", _read_exact(inp, 8))
            text = _read_exact(inp, n).decode()
        except EOFError:
            return
        try:
            timings, optimized, obj = compile_object(llvm, tm, host["triple"], host["layout"], text)
        except Exception as e:
            out.write(b"\x01")
            _send(out, f"{type(e).__name__}: {e}".encode())
        else:
            out.write(b"\x00")
            _send(out, json.dumps(timings).encode(), optimized.encode(), obj)
        out.flush()


if __name__ == "__main__":
    main()


# ---------------------------------------------------------------- the parent's side


class Unavailable(RuntimeError):
    """The child could not be started or died; the caller compiles in-process instead."""


class Client:
    """One child per process, started on the first tier-up; requests are serialised."""

    def __init__(self):
        import threading

        self._lock = threading.Lock()
        self.proc = None

    def _start(self):
        import os
        import subprocess

        host = engine.host_info()
        host["layout"] = engine.triple_and_layout()[1]
        # -P: the script's directory (runtime/) is not put on the child's path
        cmd = [
            sys.executable,
            *(["-P"] if sys.version_info >= (3, 11) else []),
            os.path.abspath(__file__),
        ]
        try:
            self.proc = subprocess.Popen(
                cmd,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
            self.proc.stdin.write(json.dumps(host).encode() + b"\n")
            self.proc.stdin.flush()
        except OSError as e:
            self.proc = None
            raise Unavailable(f"could not start the full-tier compiler process: {e}") from e

    def compile(self, text: str):
        """(timings, optimised IR, object code) for LLVM IR text at the full tier."""
        with self._lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            p = self.proc
            try:
                _send(p.stdin, text.encode())
                p.stdin.flush()
                status = _read_exact(p.stdout, 1)
                fields = []
                for _ in range(3 if status == b"\x00" else 1):
                    (n,) = struct.unpack("<Q", _read_exact(p.stdout, 8))
                    fields.append(_read_exact(p.stdout, n))
            except (OSError, EOFError, ValueError) as e:
                rc = self.close()
                how = (
                    f"killed by {_signal_name(-rc)}"
                    if rc is not None and rc < 0
                    else f"exit status {rc}"
                    if rc is not None
                    else f"{type(e).__name__}: {e}"
                )
                raise Unavailable(
                    f"the full-tier compiler process (pid {p.pid}) died mid-compile ({how})"
                ) from e
        if status != b"\x00":
            raise RuntimeError(fields[0].decode())
        return json.loads(fields[0]), fields[1].decode(), fields[2]

    def close(self):
        """Stop the child (a new one starts at the next request); its exit status, or None
        when there was none."""
        p, self.proc = self.proc, None
        if p is None:
            return None
        try:
            p.stdin.close()
            p.wait(timeout=5)
        except Exception:
            p.kill()
            p.wait()
        finally:
            p.stdout.close()
        return p.returncode


def _signal_name(n):
    import signal  # the parent's side only: the child imports as little as it can

    try:
        return signal.Signals(n).name
    except ValueError:
        return f"signal {n}"
