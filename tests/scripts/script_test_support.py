"""What the tests of bnn's shell scripts share: the checkout, the bnn under
test ($BNN_BINARY), the Fashion-MNIST some of them run on, and stand-in
programs written into a folder put first on PATH."""
import os
import signal
import subprocess

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BNN = os.environ.get("BNN_BINARY", os.path.join(ROOT, "build", "src", "bnn"))
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def write_executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o755)


def skip_without_fashion_mnist(test):
    if not os.path.isdir(FASHION_MNIST):
        test.skipTest(f"Fashion-MNIST not installed at {FASHION_MNIST}")


def run_in_own_group(args, env, timeout):
    """Runs `args` in a process group of its own, which is stopped whole if it
    overruns `timeout` seconds (subprocess.TimeoutExpired is then raised), so
    that nothing a script started outlives its test."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                         start_new_session=True)
    try:
        stdout, stderr = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise
    return subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr)
