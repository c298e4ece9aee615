"""The command line ends without the interpreter's teardown (`cli.leave`) and loses nothing by it: the exit
functions run, the standard streams are flushed, the exit code is the command's, and a thread still running is
waited for."""

import subprocess
import sys

SCRIPT = """
import atexit, sys, threading, time
from adaptsim import cli
atexit.register(lambda: print("exit functions ran", flush=False))
if "--thread" in sys.argv:
    threading.Thread(target=lambda: (time.sleep(0.5), print("thread done", flush=False))).start()
print("x" * 200_000, end="", flush=False)  # buffered when stdout is a pipe
sys.argv = ["adaptsim", "table", sys.argv[1]]
cli.main()
"""


def command(*args):
    return subprocess.run([sys.executable, "-c", SCRIPT, *args], capture_output=True, text=True, timeout=120)


def test_the_command_line_keeps_its_exit_code_output_and_exit_functions(tmp_path):
    done = command(str(tmp_path / "missing"))
    assert done.returncode == 1
    assert f"adaptsim table: error: {tmp_path / 'missing'}: no such directory" in done.stderr
    assert done.stdout == "x" * 200_000 + "exit functions ran\n"


def test_a_thread_still_running_is_waited_for(tmp_path):
    done = command(str(tmp_path / "missing"), "--thread")
    assert done.returncode == 1
    assert done.stdout.endswith("thread done\nexit functions ran\n")
