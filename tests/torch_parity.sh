#!/bin/sh
# torch_parity.sh: the same training in cltensor (tests/parity) and in
# PyTorch, from the same weights on the same batches: an MLP (Linear, Tanh,
# GELU, LayerNorm) and a CNN (Conv2d, BatchNorm2d with its running
# statistics, ReLU, MaxPool2d, Flatten, Linear),
# with cross entropy (label smoothing), clip_grad_norm and SGD (momentum,
# Nesterov, weight decay), Adam (amsgrad, weight decay) or AdamW; the losses
# of every step and the final weights must agree to float32 rounding.  The
# weights go through safetensors both ways and the data through .npy.
# Skips (exit 77), saying why, without a Python that has torch, numpy and
# safetensors (set PYTHON to choose one).
set -u
prog="${top_builddir:-.}/tests/parity"
[ -x "$prog" ] || { echo "torch_parity: $prog is not built: skipping"; exit 77; }
py=""
for cand in ${PYTHON:-} python3 /usr/bin/python3; do
    command -v "$cand" >/dev/null 2>&1 || continue
    if "$cand" -c 'import torch, numpy, safetensors' >/dev/null 2>&1; then
        py=$cand
        break
    fi
done
if [ -z "$py" ]; then
    echo "torch_parity: no Python with torch, numpy and safetensors: skipping" \
         "(Debian: python3-torch python3-numpy, pip install safetensors; or set PYTHON)"
    exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/clt_parity.XXXXXX") || exit 99
trap 'rm -rf "$tmp"' EXIT INT TERM
exec "$py" - "$prog" "$tmp" <<'PYEOF'
import subprocess, sys
import numpy as np
import torch
from safetensors.torch import save_file, load_file

prog, tmp = sys.argv[1], sys.argv[2]
torch.manual_seed(0)
B, STEPS = 16, 12
nn = torch.nn

def model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Linear(64, 32), nn.Tanh(), nn.Linear(32, 32), nn.GELU(),
                             nn.LayerNorm(32), nn.Linear(32, 10))
    return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, bias=False), nn.BatchNorm2d(4), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10))

def optimizer(name, params):
    if name == "sgd":
        return torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=1e-3, nesterov=True)
    if name == "adam":
        return torch.optim.Adam(params, lr=1e-2, weight_decay=1e-2, amsgrad=True)
    return torch.optim.AdamW(params, lr=1e-2, weight_decay=1e-2)

failures = 0
for kind in ("mlp", "cnn"):
    shape = (4 * B, 64) if kind == "mlp" else (4 * B, 1, 8, 8)
    x = torch.rand(shape) * 2 - 1
    y = torch.randint(0, 10, (4 * B,))
    np.save(f"{tmp}/x.npy", x.numpy())
    np.save(f"{tmp}/y.npy", y.numpy())
    for name in ("sgd", "adam", "adamw"):
        m = model(kind)
        save_file({k: v.contiguous() for k, v in m.state_dict().items()}, f"{tmp}/init.safetensors")
        r = subprocess.run([prog, kind, name, f"{tmp}/init.safetensors", f"{tmp}/x.npy",
                            f"{tmp}/y.npy", str(B), str(STEPS), f"{tmp}/out.safetensors",
                            f"{tmp}/losses.npy"], capture_output=True, text=True)
        if r.returncode != 0 or r.stderr:
            print(f"torch_parity: {kind} {name}: parity failed: {r.stderr}")
            failures += 1
            continue
        opt = optimizer(name, m.parameters())
        loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
        losses = []
        for s in range(STEPS):
            b = s % (x.shape[0] // B)
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(m(x[b * B:(b + 1) * B]), y[b * B:(b + 1) * B])
            loss.backward()
            nn.utils.clip_grad_norm_(m.parameters(), 1.0)
            opt.step()
            losses.append(loss.item())
        ours = np.load(f"{tmp}/losses.npy")
        dl = float(np.max(np.abs(ours - np.array(losses, dtype=np.float32))))
        state = load_file(f"{tmp}/out.safetensors")
        dw = max(float((state[k].double() - v.double()).abs().max())
                 for k, v in m.state_dict().items())
        worst = max(m.state_dict(), key=lambda k: float((state[k].double() - m.state_dict()[k].double()).abs().max()))
        ok = dl < 1e-4 and dw < 1e-4 and set(state) == set(m.state_dict())
        print(f"torch_parity: {kind} {name}: losses {losses[0]:.4f} -> {losses[-1]:.4f}, "
              f"largest difference in losses {dl:.2e}, in weights {dw:.2e} ({worst}): "
              f"{'ok' if ok else 'DIFFERENT'}")
        failures += not ok
print(f"torch_parity: torch {torch.__version__}: {6 - failures} of 6 trainings agree")
sys.exit(1 if failures else 0)
PYEOF
