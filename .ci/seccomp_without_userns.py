"""Write a seccomp profile for podman that refuses new namespaces, as Docker's default profile does.

podman's own default lets a container create user namespaces, so bubblewrap starts in it; Docker's
does not (no unshare or setns, and clone only without namespace flags), so there `checks` falls
back to its fork level. image-check grades under both. Usage: seccomp_without_userns.py IN OUT
"""

import json
import sys

NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
REFUSED = {"clone", "clone3", "unshare", "setns"}
ENOSYS = 38  # clone3 "not implemented": glibc then falls back to clone, which the rule below filters


def main(source: str, target: str) -> None:
    with open(source, encoding="utf-8") as handle:
        profile = json.load(handle)
    rules = []
    for rule in profile["syscalls"]:
        names = [name for name in rule.get("names", []) if name not in REFUSED]
        if names:
            rules.append({**rule, "names": names})
    rules += [{"names": ["clone"], "action": "SCMP_ACT_ALLOW",
               "args": [{"index": 0, "value": NAMESPACE_FLAGS, "valueTwo": 0, "op": "SCMP_CMP_MASKED_EQ"}]},
              {"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": ENOSYS}]
    profile["syscalls"] = rules
    with open(target, "w", encoding="utf-8") as handle:
        json.dump(profile, handle, indent=1)


if __name__ == "__main__":
    main(*sys.argv[1:])
