"""A Debian kernel under qemu, with nothing downloaded outside Debian's archive and nothing installed
on the host: the machinery the kernel matrix (kernels.py, `make kernels`) and the churn guests
(guest_churn.py) share.

* ``fetch``: the kernel package is fetched with ``apt-get download`` and unpacked with ``dpkg-deb -x``
  into ``build/kernels/<release>/`` (gitignored; reused on the next run; never installed on the host);
* ``guest_plan``: a kernel whose config lacks what the check needs is not booted (the reason names
  the missing options);
* ``initramfs``: a tiny initramfs (written here, no cpio tool needed) holds busybox-static as init and
  the modules the guest needs from that same package (virtio, 9p, veth; .ko.xz unpacked with lzma);
* ``boot``: the host's root filesystem is shared read-only over virtio-9p — the guest runs the host's
  own python, clang, bpftool and this worktree against its own kernel; /tmp and /run are tmpfs, and a
  second, writable share (``build/kernels/out/<release>/<pid>-<name>/``) takes the result. A kernel
  built without 9p (Debian's cloud flavour) mounts both over virtiofs, served by qemu's virtiofsd,
  which is ended on every exit path. A boot holds ``flock /tmp/mpcc-bench.lock`` (``lock=False``
  when the caller holds it): the guest keeps both CPUs busy.
"""

from __future__ import annotations

import json
import lzma
import os
import re
import shutil
import subprocess
import time
from pathlib import Path

from mpcc.lab import ROOT
CACHE = ROOT / "build" / "kernels"
LOCK = "/tmp/mpcc-bench.lock"
BUSYBOX = Path("/bin/busybox")          # Debian busybox-static
#: Debian's kernel versions (package name pattern of the release) and flavours: the generic one,
#: ``rt`` (PREEMPT_RT: softirqs in threads, sleeping spinlocks) and ``cloud`` (a reduced config for VMs:
#: no 9p, so the guest reaches the host's files over virtiofs instead)
VERSIONS = {"6.1": r"6\.1\.0-[0-9]+", "6.12": r"6\.12\.[0-9]+\+deb[0-9]+"}
FLAVOURS = ("", "rt", "cloud")
#: kernel series ("6.12", "6.12-rt", …) → Debian package name pattern (the newest match is used)
SERIES = {v + (f"-{f}" if f else ""): rf"linux-image-{pat}-{f + '-' if f else ''}amd64"
          for v, pat in VERSIONS.items() for f in FLAVOURS}
#: what a guest must have, from the package's boot/config-<release>: (option, what it is for)
REQUIRED_CONFIG = [
    ("CONFIG_BPF_SYSCALL", "BPF"),
    ("CONFIG_BPF_JIT", "the BPF JIT (struct_ops calls go through JIT-built trampolines)"),
    ("CONFIG_DEBUG_INFO_BTF", "kernel BTF (CO-RE relocation and struct_ops registration)"),
    ("CONFIG_MPTCP", "MPTCP"),
    ("CONFIG_VETH", "veth (the check's two-path network)"),
    ("CONFIG_INET_MPTCP_DIAG", "MPTCP diag (ss -M reads the subflows)"),
]
#: how the guest mounts the host's root and the result folder: 9p (virtio-9p) or, where the kernel has
#: no 9p (Debian's cloud flavour), virtiofs with qemu's virtiofsd
SHARE_CONFIG = {"9p": ("CONFIG_NET_9P", "CONFIG_NET_9P_VIRTIO", "CONFIG_9P_FS"), "virtiofs": ("CONFIG_VIRTIO_FS",)}
SHARE_MODULES = {"9p": [], "virtiofs": ["virtiofs"]}
VIRTIOFSD = ("virtiofsd", "/usr/lib/qemu/virtiofsd", "/usr/libexec/virtiofsd")
#: modules the guest needs (with their dependencies from modules.dep)
#: (the guest has no modprobe — the host has no kmod — so nothing autoloads: ss needs the diag modules)
GUEST_MODULES = ["virtio_pci", "9pnet_virtio", "9p", "veth", "inet_diag", "tcp_diag", "mptcp_diag"]
GUEST_TIMEOUT_S = 900     # one boot, from taking the lock to power-off
GUEST_MEM_MB = 2048
os.environ["PATH"] = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])


# --- packages --------------------------------------------------------------------------------
def _version_key(name: str) -> list:
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", name)]


def resolve(series: str) -> str:
    """The newest Debian package of a kernel series known to apt (`apt-cache search`, no download)."""
    p = subprocess.run(["apt-cache", "search", "--names-only", f"^{SERIES[series]}$"],
                       capture_output=True, text=True)
    names = [ln.split(" ", 1)[0] for ln in p.stdout.splitlines() if ln.strip()]
    names = [n for n in names if re.fullmatch(SERIES[series], n)]
    if not names:
        raise SystemExit(f"kernels: no package matching {SERIES[series]} in apt's lists "
                         "(fix: apt-get update, or pass --package SERIES=NAME)")
    return max(names, key=_version_key)


def release_of(package: str) -> str:
    return package.removeprefix("linux-image-")


def series_of(name: str) -> str | None:
    """A --kernels entry as a series: a SERIES key, or a whole Debian package name
    (``linux-image-…-amd64``, any version or flavour apt knows), whose series is its release."""
    if name in SERIES or name == "running":
        return name
    if re.fullmatch(r"linux-image-[0-9][0-9a-z.+~-]*", name):
        return release_of(name)
    return None


def package_overrides(values: list[str]) -> dict[str, str]:
    """``--package SERIES=NAME`` flags (kernels.py, guest_churn.py) as {series: package}; raises
    ValueError naming the first bad one."""
    bad = [x for x in values if "=" not in x]
    if bad:
        raise ValueError(f"--package {bad[0]!r}: give SERIES=NAME, e.g. 6.1=linux-image-6.1.0-56-amd64")
    return dict(x.split("=", 1) for x in values)


# --- kernel config ---------------------------------------------------------------------------
def kernel_config(tree: Path, rel: str) -> dict[str, str]:
    """The package's build config (boot/config-<release>): option → value (y, m, a number, a string)."""
    path = tree / "boot" / f"config-{rel}"
    out = {}
    for ln in path.read_text(errors="replace").splitlines():
        m = re.match(r"(CONFIG_[A-Za-z0-9_]+)=(.*)", ln)
        if m:
            out[m.group(1)] = m.group(2)
    return out


def guest_plan(config: dict[str, str]) -> tuple[str | None, str | None]:
    """(share, None) when a guest of this kernel can run the check, with the share it mounts the
    host's files over ("9p" or "virtiofs"); (None, reason) naming what the kernel lacks otherwise."""
    on = lambda opt: config.get(opt) in ("y", "m")    # noqa: E731
    missing = [f"{opt} ({what})" for opt, what in REQUIRED_CONFIG if not on(opt)]
    if missing:
        return None, "kernel built without " + ", ".join(missing)
    for share, opts in SHARE_CONFIG.items():
        if all(on(o) for o in opts):
            return share, None
    return None, ("kernel built without 9p (CONFIG_NET_9P, CONFIG_9P_FS) and without virtiofs "
                  "(CONFIG_VIRTIO_FS): the guest cannot mount the host's files")


def virtiofsd() -> str | None:
    """qemu's virtiofsd (Debian's qemu-system-common ships it in /usr/lib/qemu)."""
    return next((p for p in (shutil.which(VIRTIOFSD[0]), *VIRTIOFSD[1:]) if p and os.access(p, os.X_OK)), None)


def fetch(package: str) -> Path:
    """Download and unpack a kernel package into build/kernels/<release>/ (cached)."""
    rel = release_of(package)
    tree = CACHE / rel
    if (tree / "boot" / f"vmlinuz-{rel}").exists():
        return tree
    debs = CACHE / "debs"
    debs.mkdir(parents=True, exist_ok=True)
    subprocess.run(["apt-get", "download", "-q", package], cwd=debs, check=True,
                   stdout=subprocess.DEVNULL)
    deb = max(debs.glob(f"{package}_*.deb"), key=lambda p: p.stat().st_mtime)
    tmp = tree.with_name(rel + ".part")
    shutil.rmtree(tmp, ignore_errors=True)
    subprocess.run(["dpkg-deb", "-x", str(deb), str(tmp)], check=True)
    tmp.rename(tree)
    return tree


# --- initramfs -------------------------------------------------------------------------------
def _ko_bytes(path: Path) -> bytes:
    data = path.read_bytes()
    return lzma.decompress(data) if path.name.endswith(".xz") else data


def modinfo_depends(ko: bytes) -> list[str]:
    """The ``depends=`` entry of a module's .modinfo section (what depmod reads): module names."""
    m = re.search(rb"(?:^|\0)depends=([^\0]*)\0", ko)
    return [d for d in (m.group(1).decode().split(",") if m else []) if d]


def _norm(name: str) -> str:
    return name.replace("-", "_")


def module_closure(modules: dict[str, bytes | Path], wanted: list[str]) -> list[str]:
    """Names of ``wanted`` modules and their dependencies (from each .ko's modinfo; a package
    carries no modules.dep, depmod makes it at install), dependencies first. ``modules`` maps a
    module name to its file or bytes. A name absent from ``modules`` is built into the kernel."""
    order: list[str] = []

    def visit(name: str) -> None:
        name = _norm(name)
        if name in order or name not in modules:
            return
        src = modules[name]
        for d in modinfo_depends(src if isinstance(src, bytes) else _ko_bytes(src)):
            visit(d)
        order.append(name)

    for w in wanted:
        visit(w)
    return order


def cpio_newc(entries: list[tuple[str, int, bytes, tuple[int, int]]]) -> bytes:
    """An uncompressed "newc" cpio archive (what the kernel unpacks as initramfs).
    ``entries``: (name, mode, data, (rdev major, minor))."""
    out = bytearray()

    def pad4() -> None:
        out.extend(b"\0" * (-len(out) % 4))

    for ino, (name, mode, data, (rmaj, rmin)) in enumerate([*entries, ("TRAILER!!!", 0, b"", (0, 0))], 1):
        nm = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, rmaj, rmin, len(nm), 0]
        out.extend(b"070701" + b"".join(b"%08X" % f for f in fields))
        out.extend(nm)
        pad4()
        out.extend(data)
        pad4()
    return bytes(out)


INIT = r"""#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /lib/mods/order); do insmod /lib/mods/$m || echo "mpcc-guest: insmod $m failed"; done
R=/newroot
mkdir -p $R
if @MOUNT_ROOT@ hostroot $R; then
  # the host folders the guest's /tmp and /run tmpfs would hide (a checkout or venv under /tmp):
  # held by a bind mount first, put back at the same path on the tmpfs
  for d in @KEEP@; do mkdir -p /keep$d && mount -o bind $R$d /keep$d; done
  mount -t tmpfs tmp $R/tmp; mount -t tmpfs run $R/run
  for d in @KEEP@; do mkdir -p $R$d && mount -o bind /keep$d $R$d; done
  mount -t proc proc $R/proc; mount -t sysfs sys $R/sys; mount -t devtmpfs dev $R/dev
  mount -t bpf bpf $R/sys/fs/bpf
  mkdir -p $R/tmp/out
  @MOUNT_OUT@ out $R/tmp/out
  ip link set lo up
  if chroot $R /bin/sh -c 'test -x "$0"' @EXE@; then
    echo "mpcc-guest: running the check on $(uname -r)"
    chroot $R /usr/bin/env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/root \
      PYTHONDONTWRITEBYTECODE=1 TMPDIR=/tmp MPCC_BPF_OUTPUT=/tmp/bpf-out MPCC_RUN_DIR=/run/mpcc \
      @CMD@ > $R/tmp/out/guest.log 2>&1
    echo "mpcc-guest: exit $?"
  else
    echo "mpcc-guest: cannot run the check: @EXE@ is not visible in the guest" | tee $R/tmp/out/guest.log
  fi
  sync; umount $R/tmp/out
else
  echo "mpcc-guest: cannot mount the host root over @SHARE@"
fi
poweroff -f
"""
#: the guest's mount commands per share (the root read-only)
MOUNTS = {"9p": ("mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose",
                 "mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000"),
          "virtiofs": ("mount -t virtiofs -o ro", "mount -t virtiofs")}


#: the guest's own tmpfs mounts over the host's folders of the same name
GUEST_TMPFS = ("/tmp", "/run")


def hidden_paths(exe: str, root: Path | None = None) -> list[str]:
    """Host folders the check needs that the guest's tmpfs (/tmp, /run) would hide: the checkout
    (``root``, :data:`ROOT` by default) and the environment of ``exe`` (its venv: ``exe``'s folder's
    parent), those that lie under /tmp or /run, without one inside another. The guest puts each
    back at the same path, so the venv's absolute paths (its python, the editable install's path
    entry) stay valid. A path with a space or a shell character is refused (ValueError)."""
    wanted = [Path(os.path.abspath(ROOT if root is None else root)), Path(os.path.abspath(exe)).parent.parent]
    out: list[str] = []
    for p in wanted:
        if any(p == Path(t) or Path(t) in p.parents for t in GUEST_TMPFS) and p != Path(p.anchor):
            if not any(Path(q) == p or Path(q) in p.parents for q in out):
                out = [q for q in out if p not in Path(q).parents] + [str(p)]
    for q in out:
        if any(c.isspace() or c in "'\"$`;&|<>()" for c in q):
            raise ValueError(f"the checkout's path {q!r} has a space or shell character: the guest "
                             "cannot mount it (fix: clone it to a plain path)")
    return out


def initramfs(tree: Path, rel: str, cmd: list[str], modules: list[str] = GUEST_MODULES, share: str = "9p") -> bytes:
    moddir = tree / "lib" / "modules" / rel
    files = {_norm(p.name.split(".ko")[0]): p for p in (moddir / "kernel").rglob("*.ko*")}
    order = module_closure(files, [*modules, *SHARE_MODULES[share]])
    entries = [(d, 0o040755, b"", (0, 0)) for d in
               ("bin", "dev", "proc", "sys", "newroot", "lib", "lib/mods")]
    entries.append(("dev/console", 0o020600, b"", (5, 1)))
    entries.append(("bin/busybox", 0o100755, BUSYBOX.read_bytes(), (0, 0)))
    names = []
    for mod in order:
        data = _ko_bytes(files[mod])
        name = mod + ".ko"
        names.append(name)
        entries.append((f"lib/mods/{name}", 0o100644, data, (0, 0)))
    entries.append(("lib/mods/order", 0o100644, ("\n".join(names) + "\n").encode(), (0, 0)))
    init = INIT.replace("@CMD@", " ".join(cmd)).replace("@SHARE@", share).replace("@EXE@", cmd[0])
    init = init.replace("@KEEP@", " ".join(hidden_paths(cmd[0])))
    init = init.replace("@MOUNT_ROOT@", MOUNTS[share][0]).replace("@MOUNT_OUT@", MOUNTS[share][1])
    entries.append(("init", 0o100755, init.encode(), (0, 0)))
    return cpio_newc(entries)


def default_accel() -> str:
    """kvm when it can run a stock kernel. A host whose /dev/kvm is PVM (kvm_pvm: nested
    virtualization without VMX, e.g. inside a cloud sandbox) runs only PVM-enabled guest kernels —
    Debian's stall in the decompressor — so there qemu's TCG emulator is used (≈5× slower, works)."""
    if not os.access("/dev/kvm", os.W_OK) or Path("/sys/module/kvm_pvm").exists():
        return "tcg"
    return "kvm"


def virtiofs_sockets(out: Path) -> dict[str, Path]:
    """The vhost-user sockets of the two virtiofs shares (tag → socket), in the boot's folder."""
    return {"hostroot": out / "vfs-root.sock", "out": out / "vfs-out.sock"}


def qemu_cmd(tree: Path, rel: str, initrd: Path, out: Path, accel: str = "kvm", append: str = "",
             cpu: str | None = None, share: str = "9p") -> list[str]:
    """``cpu``: a qemu CPU model instead of the accelerator's default (host / max). ``share``: 9p
    (qemu serves the host's root itself) or virtiofs (two virtiofsd, started by ``boot``; the guest's
    memory must then be a shared memfd that virtiofsd maps)."""
    cpu = cpu or ("host,-arch-capabilities" if accel == "kvm" else "max")
    if share == "virtiofs":
        fs = ["-object", f"memory-backend-memfd,id=mem,size={GUEST_MEM_MB}M,share=on", "-numa", "node,memdev=mem"]
        for k, (tag, sock) in enumerate(virtiofs_sockets(out).items()):
            fs += ["-chardev", f"socket,id=fs{k},path={sock}",
                   "-device", f"vhost-user-fs-pci,queue-size=1024,chardev=fs{k},tag={tag}"]
    else:
        fs = ["-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap",
              "-virtfs", f"local,path={out},mount_tag=out,security_model=none"]
    return ["qemu-system-x86_64", "-accel", accel, "-cpu", cpu, "-m", str(GUEST_MEM_MB), "-smp", "2",
            "-display", "none", "-monitor", "none", "-serial", f"file:{out / 'console.log'}",
            "-no-reboot", "-nic", "none",
            "-kernel", str(tree / "boot" / f"vmlinuz-{rel}"), "-initrd", str(initrd),
            "-append", f"console=ttyS0 panic=-1 quiet {append}".strip(), *fs]


class Unsupported(str):
    """The reason a kernel cannot run the check at all (from its config, before any boot)."""


def start_virtiofsd(out: Path) -> list[subprocess.Popen]:
    """Two virtiofsd (the host's root, read-only in the guest; the result folder), each waiting on its
    socket for qemu. Raises OSError with the fix when qemu's virtiofsd is not installed or does not start."""
    exe = virtiofsd()
    if exe is None:
        raise OSError("this kernel has no 9p, and virtiofsd is not installed "
                      "(fix: apt-get install qemu-system-common, which ships /usr/lib/qemu/virtiofsd)")
    procs = []
    for tag, sock in virtiofs_sockets(out).items():
        source = "/" if tag == "hostroot" else str(out)
        # chroot, not the default namespace sandbox: its pivot_root of "/" onto itself fails (EBUSY)
        log = open(out / f"virtiofsd-{tag}.log", "w")
        procs.append(subprocess.Popen([exe, f"--socket-path={sock}", "-o", f"source={source}", "-o", "cache=auto",
                                       "-o", "announce_submounts", "-o", "sandbox=chroot"], stdin=subprocess.DEVNULL, stdout=log,
                                      stderr=subprocess.STDOUT))
        log.close()
    deadline = time.monotonic() + 10
    while not all(s.exists() for s in virtiofs_sockets(out).values()):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            stop_daemons(procs)
            raise OSError(f"virtiofsd did not start (log: {out}/virtiofsd-*.log)")
        time.sleep(0.05)
    return procs


def stop_daemons(procs: list[subprocess.Popen]) -> None:
    """Ends the virtiofsd of a boot (each also ends when qemu closes its socket), on every exit path."""
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def boot(package: str, cmd: list[str], accel: str, name: str, timeout_s: int = GUEST_TIMEOUT_S,
         modules: list[str] = GUEST_MODULES, append: str = "", cpu: str | None = None, lock: bool = True
         ) -> tuple[Path, dict | None, str | None]:
    """Boot ``package``'s kernel once (under the bench lock unless ``lock`` is False: the caller
    holds it) and run ``cmd`` inside; the guest writes to /tmp/out, which is
    ``build/kernels/out/<release>/<pid>-<name>/`` here. Returns that directory, the guest's
    /tmp/out/result.json (or None) and the reason when there is none."""
    rel = release_of(package)
    tree = fetch(package)
    out = CACHE / "out" / rel / f"{os.getpid()}-{name}"     # two runs may wait for the lock at once
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    share, reason = guest_plan(kernel_config(tree, rel))
    if share is None:
        return out, None, Unsupported(reason)
    daemons = []
    try:
        if share == "virtiofs":
            daemons = start_virtiofsd(out)
        initrd = out / "initrd.cpio"
        initrd.write_bytes(initramfs(tree, rel, cmd, modules, share))
        # the guest keeps both CPUs busy (TCG): it holds the bench lock, so that no one's timed run shares them
        proc = subprocess.Popen([*(["flock", LOCK] if lock else []), "sh", "-c", 'date -u +%s > "$0"; cat /proc/loadavg >> "$0"; exec "$@"',
                                 str(out / "lock_taken"),
                                 "timeout", str(timeout_s), "nice", "-n", "10",
                                 *qemu_cmd(tree, rel, initrd, out, accel, append, cpu, share)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        qout, _ = proc.communicate()
    except (OSError, ValueError) as e:       # virtiofsd missing; a checkout path the guest cannot mount
        return out, None, str(e)
    finally:
        stop_daemons(daemons)
        for sock in virtiofs_sockets(out).values():
            sock.unlink(missing_ok=True)
    if proc.returncode == 124:
        return out, None, f"guest did not finish in {timeout_s} s (console: {out / 'console.log'})"
    result_file = out / "result.json"
    if not result_file.exists():
        console = (out / "console.log").read_text(errors="replace") if (out / "console.log").exists() else ""
        return out, None, no_result_reason(console, guest_log(out), qout, out)
    return out, json.loads(result_file.read_text()), None


def guest_log(out: Path) -> str:
    try:
        return (out / "guest.log").read_text(errors="replace")
    except OSError:
        return ""


def no_result_reason(console: str, log: str, qemu_out: str, out: Path) -> str:
    """One line: why a boot gave no result. The guest's own verdict when it gave one ("cannot run the
    check: … not visible", "cannot mount the host root"), else its exit status with the last line
    the check printed (e.g. ``/usr/bin/env: '…/python': No such file or directory``)."""
    marks = [ln.split("mpcc-guest: ", 1)[1].strip() for ln in console.splitlines() if "mpcc-guest: " in ln]
    marks += [ln.strip() for ln in console.splitlines() if "Kernel panic" in ln]
    verdict = next((m for m in reversed(marks) if m.startswith("cannot")), None)
    if verdict is None:
        last = next((ln.strip() for ln in reversed(log.splitlines()) if ln.strip()), "")
        status = next((m for m in reversed(marks) if m.startswith(("exit", "Kernel panic"))), None)
        verdict = "; ".join(x for x in (status, last) if x) or qemu_out.strip()[-200:] or "the guest printed nothing"
    return f"no result from the guest ({' '.join(verdict.split())[:300]}; log: {out})"


def lock_taken(out: Path) -> tuple[int, float]:
    """When the boot got the bench lock (Unix s) and the host's 1-minute load average then."""
    lines = (out / "lock_taken").read_text().splitlines()
    return int(lines[0]), float(lines[1].split()[0]) if len(lines) > 1 else float("nan")
