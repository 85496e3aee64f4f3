#!/usr/bin/env bash
# The checks that need a GPU, on a machine where torch sees one (run from the repository root, with
# the project importable from src/): the cuda-marked tests, 03_mlp graded with --device cuda, and
# `checks verify` of every assignment with the GPU among the devices. Writes verify logs to $OUT
# when set (else to /tmp).
set -u
OUT=${OUT:-/tmp}
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
checks="python3 -c 'import sys; from checks.cli import main; sys.exit(main())'"   # `timeout` runs no shell function
nvidia-smi -L; python3 -c "import torch, numpy; print('torch', torch.__version__, 'cuda', torch.cuda.is_available(), 'numpy', numpy.__version__)"
echo "== pytest -m cuda"; timeout 200 python3 -m pytest -q -p no:cacheprovider -m cuda tests/sandbox/test_cuda.py 2>&1 | tail -n 15
echo "== grade 03_mlp reference --device cuda"; eval timeout 120 $checks grade 03_mlp solutions/03_mlp --out /tmp/g03 --device cuda 2>&1 | tail -n 4
python3 - <<'PY'
import json, glob
for f in glob.glob('/tmp/g03/*/results.json'):
    d = json.load(open(f)); print(f, d['score'], d.get('extra_data'))
    for t in d['tests']:
        if t['score'] < t['max_score']:
            print(t['name'], t['score'], t['max_score'], t['output'][:1500])
PY
echo "== grade 03_mlp reference --device auto"; eval timeout 120 $checks grade 03_mlp solutions/03_mlp --out /tmp/g03auto 2>&1 | tail -n 1
echo "== verify (device auto: cpu and cuda)"; for a in $(ls solutions); do eval timeout 150 $checks verify $a > $OUT/verify_$a.txt 2>&1; echo "$a rc=$?"; tail -n 1 $OUT/verify_$a.txt; grep -E "│ NO" $OUT/verify_$a.txt | head -5; done
