#!/usr/bin/env bash
# The grading images, built and run for real on CI's kind of machine: no Docker daemon and no
# registry, but podman with runc. Everything peculiar to this machine lives here, never in
# docker/: the runtime (crun fails here; runc works), ulimits no higher than the host's hard
# limits (nproc no higher than pid_max either), a bookworm base made with mmdebstrap, and an
# offline build (--network=none) from wheels that pip downloads on the host, where its
# configuration finds torch's CPU wheel. podman keeps images in its own storage, never here.
#
#   .ci/image.sh build [cpu|gpu]  build localhost/checks-cpu, or the GPU recipe on the same base
#                                 with torch's CPU wheel (localhost/checks-gpu: its steps are the
#                                 CPU recipe's, so here it reuses the CPU image's layers)
#   .ci/image.sh check            build if needed, grade examples/01_tensors in the CPU image with
#                                 --network=none; exit 1 unless every score equals the host's
#   .ci/image.sh check-gpu        build the GPU recipe, grade the reference in it: it must score 100
#   .ci/image.sh check-serve      build the course server's image on the CPU one, start it on the
#                                 bundled example course and wait for its health check to pass
set -euo pipefail
cd "$(dirname "$0")/.."

WORK="${CHECKS_IMAGE_WORK:-/tmp/checks-image}"  # rootfs, wheels, grades: never in the repository
BASE_IMAGE=localhost/bookworm-base
PYTHON="${PYTHON_BIN:-.venv/bin/python}"
mkdir -p "$WORK"

say() { echo "image [$((SECONDS / 60))m$((SECONDS % 60))s]: $*"; }  # time since this script started

ensure_tools() {
    local missing=()
    command -v podman >/dev/null || missing+=(podman)
    command -v runc >/dev/null || missing+=(runc)
    command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
    if [ "${#missing[@]}" -gt 0 ]; then
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo -n"
        say "installing ${missing[*]}"
        { $sudo apt-get update -qq \
          && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"; } \
          > "$WORK/apt.log" 2>&1 || { cat "$WORK/apt.log"; return 1; }
    fi
    local nofile nproc
    nofile="$(ulimit -Hn)"; [ "$nofile" = unlimited ] && nofile=1048576
    nproc="$(ulimit -Hu)"; [ "$nproc" = unlimited ] && nproc=1048576
    # runc may not set nproc above pid_max here (EPERM), though the hard limit is higher
    local pid_max; pid_max="$(cat /proc/sys/kernel/pid_max)"
    [ "$nproc" -gt "$pid_max" ] && nproc="$pid_max"
    cat > "$WORK/containers.conf" <<CONF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]

[engine]
runtime = "runc"
CONF
    export CONTAINERS_CONF="$WORK/containers.conf"
    ULIMITS=(--ulimit "nofile=$nofile:$nofile" --ulimit "nproc=$nproc:$nproc")  # podman build ignores the defaults
}

base_image() {
    podman image exists "$BASE_IMAGE" && return
    say "making $BASE_IMAGE with mmdebstrap (Debian bookworm, Python 3.11, bubblewrap)"
    mmdebstrap --quiet --variant=minbase --include=python3,python3-venv,bubblewrap bookworm "$WORK/rootfs.tar"
    podman import --quiet "$WORK/rootfs.tar" "$BASE_IMAGE" >/dev/null
    rm -f "$WORK/rootfs.tar"
}

wheels() {
    # the pinned environment (CPU torch) and the build backend, so the build needs no network
    local stamp
    stamp="$(cat constraints.txt pyproject.toml | cksum | cut -d' ' -f1)"
    [ -f "$WORK/wheels/.stamp-$stamp" ] && return
    rm -rf "$WORK/wheels"
    say "downloading the pinned wheels into $WORK/wheels"
    "$PYTHON" -m pip download --quiet --dest "$WORK/wheels" --only-binary=:all: \
        -r constraints.txt "torch==2.13.0+cpu" "setuptools>=68" 2>&1 | grep -v "is ignored" || true
    touch "$WORK/wheels/.stamp-$stamp"
}

build() {
    local flavour="${1:-cpu}"
    ensure_tools; base_image; wheels
    say "building localhost/checks-$flavour from docker/$flavour/Dockerfile on $BASE_IMAGE"
    # docker format: the OCI format drops SHELL (bash with pipefail)
    podman build --quiet --format docker "${ULIMITS[@]}" --network=none --volume "$WORK/wheels:/wheels:ro" \
        --build-arg BASE="$BASE_IMAGE" --build-arg TORCH_REQUIREMENT="torch==2.13.0+cpu" \
        --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu \
        --build-arg PIP_NO_INDEX=1 --build-arg PIP_FIND_LINKS=/wheels \
        -f "docker/$flavour/Dockerfile" -t "localhost/checks-$flavour" . \
        > /dev/null 2> >(grep -v 'missing .*PIP_.* build argument' >&2)  # pip settings left unset on purpose
    say "built localhost/checks-$flavour, $(podman image ls --format '{{.Size}}' --filter reference="localhost/checks-$flavour" | head -n 1)"
}

check() {
    build cpu
    rm -rf "$WORK/host" "$WORK/subs" "$WORK"/image-*
    # the examples as a class uploads them: real folders (two of them link into the course)
    cp -RL examples/01_tensors "$WORK/subs"
    say "grading examples/01_tensors on the host, then in the image twice"
    "$PYTHON" -m checks grade 01_tensors examples/01_tensors --out "$WORK/host" --regrade >/dev/null
    # podman's default seccomp profile lets bubblewrap start in the container; Docker's does not
    "$PYTHON" .ci/seccomp_without_userns.py /usr/share/containers/seccomp.json "$WORK/seccomp.json"
    grade_in_image image-podman-default
    grade_in_image image-no-userns --security-opt seccomp="$WORK/seccomp.json"
    "$PYTHON" .ci/compare_grades.py "$WORK/host" "$WORK/image-podman-default" "$WORK/image-no-userns"
}

grade_in_image() {
    local out="$WORK/$1"; shift
    install -d -m 0777 "$out"  # the image grades as a non-root user
    podman run --rm --network=none "${ULIMITS[@]}" "$@" -v "$WORK/subs:/subs:ro" -v "$out:/out" \
        localhost/checks-cpu grade 01_tensors '/subs/*' --out /out > "$out.log" 2>&1 \
        || { cat "$out.log"; return 1; }
    say "${out##*/}: $(head -n 3 "$out.log" | tr -s ' \n' ' ')"
}

check_gpu() {
    build gpu
    rm -rf "$WORK/gpu"; install -d -m 0777 "$WORK/gpu"
    podman run --rm --network=none "${ULIMITS[@]}" -v "$WORK/gpu:/out" localhost/checks-gpu \
        grade 01_tensors /opt/checks/examples/01_tensors/reference --out /out >/dev/null
    local score
    score="$("$PYTHON" -c 'import json, sys; print(json.load(open(sys.argv[1]))["score"])' "$WORK/gpu/reference/results.json")"
    say "the GPU recipe (on the CPU base, with torch's CPU wheel) grades the reference $score of 100"
    [ "$score" = "100.0" ]
}

check_serve() {
    build cpu
    say "building localhost/checks-serve from docker/serve/Dockerfile on localhost/checks-cpu"
    podman build --quiet --format docker "${ULIMITS[@]}" --network=none --volume "$WORK/wheels:/wheels:ro" \
        --build-arg BASE=localhost/checks-cpu --build-arg PIP_NO_INDEX=1 --build-arg PIP_FIND_LINKS=/wheels \
        -f docker/serve/Dockerfile -t localhost/checks-serve . \
        > /dev/null 2> >(grep -v 'missing .*PIP_.* build argument' >&2)
    local name="checks-serve-check-$$" healthy=""
    # podman schedules health checks with systemd timers, which this machine lacks: it says so, harmlessly
    podman run -d --name "$name" --network=none "${ULIMITS[@]}" localhost/checks-serve \
        serve /opt/checks/examples/course --host 0.0.0.0 >/dev/null 2> >(grep -v 'systemd' >&2)
    for _ in $(seq 1 60); do  # the image's own HEALTHCHECK, run by hand (no systemd here to time it)
        if podman healthcheck run "$name" >/dev/null 2>&1; then healthy=yes; break; fi
        sleep 2
    done
    [ -n "$healthy" ] || podman logs "$name" | tail -n 20
    podman rm -f "$name" >/dev/null 2> >(grep -v 'systemd' >&2)
    [ -n "$healthy" ] && say "localhost/checks-serve answers its health check"
}

case "${1:-check}" in
    build) build "${2:-cpu}" ;;
    check) check ;;
    check-gpu) check_gpu ;;
    check-serve) check_serve ;;
    *) echo "usage: $0 build [cpu|gpu] | check | check-gpu | check-serve" >&2; exit 2 ;;
esac
