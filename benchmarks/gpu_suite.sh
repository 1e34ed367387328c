#!/usr/bin/env bash
# The GPU suite, for a machine with one NVIDIA GPU (written for an H200): compiles the GPU candidates'
# CUDA extensions in parallel on the CPU cores, runs every test marked `gpu`, then the GPU benchmarks,
# and prints a short table at the end. It installs nothing and asks nothing; every step has a hard
# timeout, a failing step does not stop the next, and the whole run stays inside a time budget.
#
#   benchmarks/gpu_suite.sh                 everything (about 17 minutes on an H200 with a cold build cache:
#                                           raise KFORGE_SUITE_BUDGET_S, or run the three parts below)
#   benchmarks/gpu_suite.sh tests-harness   prebuild, then the harness's GPU tests (about 8 minutes)
#   benchmarks/gpu_suite.sh tests-rest      prebuild, then every other GPU test (about 6 minutes)
#   benchmarks/gpu_suite.sh tests           both groups of tests
#   benchmarks/gpu_suite.sh bench           prebuild, then the benchmarks
#
# Full logs go to $OUT when it is set (else a new folder under /tmp, named at the end): seven files at most.
# KFORGE_SUITE_BUDGET_S caps the whole run (default 560 s, inside a 10-minute call); KFORGE_CACHE_DIR
# keeps builds between runs on one machine (default ~/.cache/kforge-gpu-suite); PYTHON picks the
# interpreter (default python3).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
WHAT=${1:-all}
LOGS=${OUT:-$(mktemp -d /tmp/kforge-gpu-suite.XXXXXX)}
mkdir -p "$LOGS"
BUDGET=${KFORGE_SUITE_BUDGET_S:-560}
START=$(date +%s)
PY=${PYTHON:-python3}
export KFORGE_CACHE_DIR=${KFORGE_CACHE_DIR:-$HOME/.cache/kforge-gpu-suite}
export PYTHONPATH="$ROOT/src:$ROOT${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONUNBUFFERED=1
SUMMARY=()

left() { echo $((BUDGET - ($(date +%s) - START))); }

# step NAME MAX_S COMMAND...: runs COMMAND with a timeout of MAX_S (or what the budget leaves, less 30 s
# for the table), output to $LOGS/NAME.log; records status and the log's last line for the table.
step() {
    local name=$1 max=$2
    shift 2
    local limit
    limit=$(($(left) - 30))
    ((limit > max)) && limit=$max
    if ((limit < 20)); then
        SUMMARY+=("$name|skipped|the time budget is spent")
        return
    fi
    echo "== $name (at most ${limit} s; log $LOGS/$name.log)"
    local t0 rc status
    t0=$(date +%s)
    timeout -k 15 "$limit" "$@" >"$LOGS/$name.log" 2>&1 </dev/null
    rc=$?
    if ((rc == 124 || rc == 137)); then
        status="TIMEOUT"
    elif ((rc != 0)); then
        status="FAILED (exit $rc)"
    else
        status="ok"
    fi
    tail -n 4 "$LOGS/$name.log" | sed 's/^/   /'
    SUMMARY+=("$name|$status|$(($(date +%s) - t0)) s; $(grep -v '^\s*$' "$LOGS/$name.log" | tail -n 1 | cut -c1-100)")
}

# ---- what the machine has --------------------------------------------------------------------------------
CHECK=$(mktemp /tmp/kforge-check-environment.XXXXXX.py)
cat >"$CHECK" <<'EOF'
import importlib, shutil, subprocess, sys
missing = []
for name in ("torch", "triton", "pydantic", "psutil", "rich", "numpy", "pytest"):
    try:
        module = importlib.import_module(name)
        print(f"{name} {getattr(module, '__version__', '')}")
    except ImportError as exc:
        missing.append(name)
        print(f"{name}: MISSING ({exc})")
for tool in ("nvcc", "ninja", "nvidia-smi"):
    print(f"{tool}: {shutil.which(tool) or 'MISSING'}")
if shutil.which("nvidia-smi"):
    print(subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip())
import torch
if not torch.cuda.is_available():
    sys.exit("no CUDA GPU visible to torch")
print("device:", torch.cuda.get_device_name(), "capability", torch.cuda.get_device_capability())
if missing:
    sys.exit(f"missing Python packages: {', '.join(missing)} (carry wheels and pip install them first)")
# Workers start with PYTHONPATH reduced to kforge's own source folder: what they import must be installed.
import os
src = os.path.join(os.getcwd(), "src")
check = subprocess.run([sys.executable, "-c", "import pydantic, psutil, torch, triton, kforge.verify.worker"],
                       env={"PATH": os.environ.get("PATH", ""), "PYTHONPATH": src}, capture_output=True, text=True)
if check.returncode:
    sys.exit("kforge's workers cannot import their dependencies with PYTHONPATH=src alone; install packages "
             "into the interpreter (pip install --no-index --no-deps WHEELS), not with --target: "
             + check.stderr.strip().splitlines()[-1])
print("environment ok")
EOF
step environment 60 "$PY" "$CHECK"
rm -f "$CHECK"

# ---- builds: one file per distinct extension, compiled side by side on the CPU cores -------------------
BUILDS=(tests/candidates/gpu_leaky_scale/cuda_honest.py tests/candidates/gpu_leaky_scale/unsynchronized_launch.py
        examples/*/solution_cuda.py)
[ -f src/kforge/data/examples/cuda/cuda/solution.py ] && BUILDS+=(src/kforge/data/examples/cuda/cuda/solution.py)
step prebuild 300 "$PY" -m kforge.verify.prebuild --platform cuda --parallel "${#BUILDS[@]}" "${BUILDS[@]}"

# ---- tests: every test file that has GPU tests, GPU tests only, in two groups ------------------------------
HARNESS_TESTS=tests/verify/test_cuda.py
mapfile -t REST_TESTS < <(grep -rlE 'mark\.gpu' tests --include='test_*.py' | grep -vx "$HARNESS_TESTS" | sort)
gpu_tests() {  # gpu_tests NAME MAX_S FILES...
    local name=$1 max=$2
    shift 2
    step "$name" "$max" "$PY" -m pytest -m gpu -q -rfE -p no:cacheprovider --junitxml="$LOGS/$name.xml" "$@"
}
if [[ $WHAT == all || $WHAT == tests || $WHAT == tests-harness ]]; then
    gpu_tests gpu-harness 480 "$HARNESS_TESTS"
fi
if [[ $WHAT == all || $WHAT == tests || $WHAT == tests-rest ]]; then
    if ((${#REST_TESTS[@]} == 0)); then
        SUMMARY+=("gpu-rest|FAILED|no other test file marks a test gpu")
    else
        gpu_tests gpu-rest 480 "${REST_TESTS[@]}"
    fi
fi

# ---- benchmarks -----------------------------------------------------------------------------------------
if [[ $WHAT == all || $WHAT == bench ]]; then
    DEADLINE=$(($(left) - 50))
    step benchmarks 400 "$PY" benchmarks/gpu_bench.py --out "$LOGS" --deadline-s "$DEADLINE"
fi

# ---- the table ------------------------------------------------------------------------------------------
echo
echo "kforge GPU suite: $(($(date +%s) - START)) s in all; logs in $LOGS"
printf '%-12s %-16s %s\n' step status detail
for row in "${SUMMARY[@]}"; do
    IFS='|' read -r name status detail <<<"$row"
    printf '%-12s %-16s %s\n' "$name" "$status" "$detail"
done
for log in "$LOGS/gpu-harness.log" "$LOGS/gpu-rest.log"; do
    [ -f "$log" ] && grep -E '^(FAILED|ERROR) ' "$log" | cut -c1-160 | head -n 20
done
if [ -f "$LOGS/benchmarks.log" ]; then
    sed -n '/^kforge GPU benchmarks/,$p' "$LOGS/benchmarks.log"
fi
