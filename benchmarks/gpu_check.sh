#!/usr/bin/env bash
# The GAN benchmark on an NVIDIA GPU: trainer vs bare loop and generation, under
# float32 / mixed_bfloat16 and XLA off / on; prints one JSON object and writes it to
# benchmarks/results/gpu-<date>.json. About 5 minutes on one GPU (plus the install).
#
#   benchmarks/gpu_check.sh [--data PATH] [--out FILE] [--allow-cpu] [--quick]
#       [--variant-timeout SECONDS]  (each variant's limit; default 240)
#       [--variant PRECISION:XLA ...]  (e.g. float32:0; default: all four)
#
# Set-up, from the repository root: a virtual environment (.venv-gpu, or $GPU_VENV)
# with the project and TensorFlow's CUDA wheels (`tensorflow[and-cuda]`), made on the
# first run. FRAUDAUG_PYTHON=/path/to/python uses an existing environment instead
# (no install). Data: --data, else data/raw/creditcard.csv (fetched when missing),
# else ../shared/data/creditcard_sample.csv.gz.
set -euo pipefail
cd "$(dirname "$0")/.."
export TF_CPP_MIN_LOG_LEVEL="${TF_CPP_MIN_LOG_LEVEL:-2}"

data=""
allow_cpu=0
pass=()
while (($#)); do
  case "$1" in
    --data) data="$2"; shift 2 ;;
    --out) pass+=("$1" "$2"); shift 2 ;;
    --allow-cpu) allow_cpu=1; pass+=("$1"); shift ;;
    --quick) pass+=("$1"); shift ;;
    --variant-timeout|--variant) pass+=("$1" "$2"); shift 2 ;;
    -h|--help) sed -n '2,14p' "$0"; exit 0 ;;
    *) echo "gpu_check: unknown argument $1" >&2; exit 2 ;;
  esac
done

if ((allow_cpu == 0)) && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu_check: no NVIDIA GPU (nvidia-smi -L failed); --allow-cpu runs it anyway" >&2
  exit 2
fi

if [[ -n "${FRAUDAUG_PYTHON:-}" ]]; then
  python="$FRAUDAUG_PYTHON"
else
  venv="${GPU_VENV:-.venv-gpu}"
  python="$venv/bin/python"
  if ! "$python" -c "import tensorflow, pipeline" >/dev/null 2>&1; then
    echo "gpu_check: installing the project and tensorflow[and-cuda] into $venv" >&2
    test -x "$python" || python3 -m venv "$venv"
    "$python" -m pip install -q --upgrade pip
    "$python" -m pip install -q -e . "tensorflow[and-cuda]>=2.16"
  fi
fi

if [[ -z "$data" ]]; then
  data=data/raw/creditcard.csv
  if [[ ! -f "$data" ]]; then
    "$python" -m pipeline fetch-data --dest "$data" >&2 ||
      data=../shared/data/creditcard_sample.csv.gz
  fi
fi
[[ -f "$data" ]] || { echo "gpu_check: $data: no such file" >&2; exit 2; }

if ((allow_cpu == 0)); then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >&2
fi
exec "$python" -m benchmarks.gpu_check --data "$data" "${pass[@]}"
