"""python/mpcc/lab/kernels.py (`make kernels`): the parts that run without root, qemu or downloads —
the initramfs archive, the module dependency walk, the table, and the plan. The guests themselves
are too long (and download kernels) for CI; their results are recorded in bench/kernel/kernels.json."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mpcc.lab import guestvm
from mpcc.lab import kernels


def _ko(depends: str) -> bytes:
    """The bytes of a module as far as depmod cares: a .modinfo with NUL-separated key=value."""
    return b"\x7fELF junk\0license=GPL\0depends=" + depends.encode() + b"\0name=x\0vermagic=6.1\0"


def test_modinfo_depends_reads_the_depends_entry():
    assert guestvm.modinfo_depends(_ko("netfs,9pnet")) == ["netfs", "9pnet"]
    assert guestvm.modinfo_depends(_ko("")) == []
    # "depends=" inside another value is not the entry
    assert guestvm.modinfo_depends(b"\0description=x depends=y\0depends=z\0") == ["z"]


def test_module_closure_puts_dependencies_first_and_skips_builtins():
    mods = {"9p": _ko("netfs,9pnet"), "9pnet_virtio": _ko("9pnet,virtio_ring"), "9pnet": _ko(""),
            "netfs": _ko("fscache"), "fscache": _ko(""), "veth": _ko("")}
    # virtio_ring is built in (not a module): skipped, not an error
    order = guestvm.module_closure(mods, ["9pnet_virtio", "9p", "veth", "virtio_pci"])
    assert sorted(order) == sorted(["9pnet", "9pnet_virtio", "fscache", "netfs", "9p", "veth"])
    for mod, src in mods.items():
        for dep in guestvm.modinfo_depends(src):
            if dep in mods:
                assert order.index(dep) < order.index(mod), (dep, mod)
    assert order.count("9pnet") == 1
    # dashes and underscores name the same module
    assert guestvm.module_closure({"mptcp_diag": _ko("inet_diag"), "inet_diag": _ko("")},
                                  ["mptcp-diag"]) == ["inet_diag", "mptcp_diag"]


@pytest.mark.skipif(not Path("/bin/busybox").exists(), reason="busybox-static not installed")
def test_cpio_archive_is_read_back_by_busybox_cpio(tmp_path):
    entries = [("bin", 0o040755, b"", (0, 0)), ("dev/console", 0o020600, b"", (5, 1)),
               ("bin/a", 0o100755, b"#!/bin/sh\necho hi\n", (0, 0)), ("odd", 0o100644, b"x" * 4097, (0, 0))]
    archive = guestvm.cpio_newc(entries)
    assert len(archive) % 4 == 0
    listing = subprocess.run(["/bin/busybox", "cpio", "-t"], input=archive, capture_output=True).stdout.decode()
    assert listing.split() == ["bin", "dev/console", "bin/a", "odd"]
    subprocess.run(["/bin/busybox", "cpio", "-i", "-d"], input=archive, cwd=tmp_path, check=True,
                   capture_output=True)
    assert (tmp_path / "bin" / "a").read_bytes() == b"#!/bin/sh\necho hi\n"
    assert (tmp_path / "odd").read_bytes() == b"x" * 4097
    assert (tmp_path / "bin" / "a").stat().st_mode & 0o777 == 0o755


def test_table_has_a_column_per_kernel_and_the_reason_of_a_failure():
    results = [
        {"environment": {"kernel": "6.1.0-56-amd64"}, "rows": [
            {"algorithm": "balia", "status": "pass"},
            {"algorithm": "olia", "status": "refused", "reason": "mpcc_olia: needs bpf_foo (6.3+)|x"}]},
        {"environment": {"kernel": "6.18.44"}, "error": "guest did not finish", "rows": []},
    ]
    lines = kernels.table(results).splitlines()
    assert lines[0] == "| algorithm | 6.1.0-56-amd64 | 6.18.44 |"
    assert lines[2] == "| `balia` | pass | guest did not finish |"
    # a "|" in a reason would break the markdown row
    assert lines[3] == "| `olia` | refused: mpcc_olia: needs bpf_foo (6.3+)/x | guest did not finish |"


def test_newest_package_is_chosen_by_version_not_by_text():
    names = ["linux-image-6.1.0-9-amd64", "linux-image-6.1.0-50-amd64", "linux-image-6.1.0-48-amd64"]
    assert max(names, key=guestvm._version_key) == "linux-image-6.1.0-50-amd64"


@pytest.mark.skipif(not shutil.which("apt-cache"), reason="no apt")
def test_plan_runs_nothing_and_names_the_packages(capsys):
    try:
        rc = kernels.main(["--plan", "--kernels", "6.1,6.12,running", "balia"])
    except SystemExit as e:              # apt lists without these kernels: the one-line fix
        assert "apt-get update" in str(e)
        return
    out = capsys.readouterr().out
    assert rc == 0
    assert "linux-image-6.1.0-" in out and "linux-image-6.12." in out
    assert "-m mpcc.lab.kernels_check --via api" in out and "algorithms: balia" in out


def test_unknown_kernel_is_one_line_exit_2(capsys):
    assert kernels.main(["--plan", "--kernels", "5.10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "5.10" in err and "fix:" in err


def test_a_partial_run_replaces_only_its_own_columns(tmp_path, monkeypatch):
    monkeypatch.setattr(kernels, "RESULTS", tmp_path / "kernels.json")
    col = lambda series, status: {"series": series, "environment": {"kernel": series}, "package": series,  # noqa: E731
                                  "rows": [{"algorithm": "balia", "status": status}]}
    kernels.RESULTS.write_text(kernels.json.dumps({"results": [col("running", "pass"), col("6.1", "fail")]}))
    merged = kernels.merge([col("6.12", "pass"), col("6.1", "pass")])
    assert [r["series"] for r in merged] == ["6.1", "6.12", "running"]
    assert [r["rows"][0]["status"] for r in merged] == ["pass", "pass", "pass"]


def test_a_guest_column_is_made_of_boots_of_at_most_per_boot_algorithms(monkeypatch):
    boots = []

    def fake_boot(package, algorithms, secs, accel, boot=0, lock=True):
        boots.append(list(algorithms))
        if boot == 1:
            return kernels._broken(package, "guest did not finish in 900 s")
        return {"package": package, "environment": {"kernel": "6.1.0-56-amd64"}, "guest_s": 100.0,
                "rows": [{"algorithm": a, "status": "pass"} for a in algorithms]}

    monkeypatch.setattr(kernels, "run_boot", fake_boot)
    algos = [f"a{i}" for i in range(7)]
    res = kernels.run_guest("linux-image-6.1.0-56-amd64", algos, 5.0, "tcg", per_boot=3)
    assert boots == [["a0", "a1", "a2"], ["a3", "a4", "a5"], ["a6"]]
    assert [r["algorithm"] for r in res["rows"]] == algos
    assert [r["status"] for r in res["rows"]] == ["pass"] * 3 + ["fail"] * 3 + ["pass"]
    assert res["boots"] == 3 and res["guest_s"] == 200.0
    assert res["environment"]["kernel"] == "6.1.0-56-amd64"
    assert res["error"] == "guest did not finish in 900 s"
    lines = kernels.table([res]).splitlines()
    assert lines[2 + 3] == "| `a3` | fail: guest did not finish in 900 s |" and lines[2 + 6] == "| `a6` | pass |"


def test_a_run_of_some_algorithms_replaces_only_their_rows(tmp_path, monkeypatch):
    rec = tmp_path / "kernels.json"
    col = lambda series, kernel, rows, date: {"series": series, "environment": {"kernel": kernel},  # noqa: E731
                                              "date": date, "rows": rows}
    rec.write_text(json.dumps({"results": [
        col("6.1", "6.1.0-56-amd64", [{"algorithm": "balia", "status": "pass"},
                                      {"algorithm": "fast", "status": "refused", "reason": "x"}], "d0"),
        col("running", "6.18", [{"algorithm": "balia", "status": "pass"}], "d0")]}))
    monkeypatch.setattr(kernels, "RESULTS", rec)
    rerun = [col("6.1", "6.1.0-56-amd64", [{"algorithm": "fast", "status": "pass"},
                                           {"algorithm": "new", "status": "pass"}], "d1")]
    rerun[0].update(guest_s=40.0, boots=1)
    merged = kernels.merge(rerun, rows_only=True)
    assert merged[0]["guest_s"] == 40.0 and merged[0]["boots"] == 1    # the recorded column had none
    assert [m["series"] for m in merged] == ["6.1", "running"]
    assert merged[0]["rows"] == [{"algorithm": "balia", "status": "pass"}, {"algorithm": "fast", "status": "pass"},
                                 {"algorithm": "new", "status": "pass"}]
    assert merged[0]["date"] == "d1" and merged[1]["date"] == "d0"
    # another release of the series: the column is replaced whole
    other = [col("6.1", "6.1.0-57-amd64", [{"algorithm": "fast", "status": "pass"}], "d2")]
    assert kernels.merge(other, rows_only=True)[0]["rows"] == [{"algorithm": "fast", "status": "pass"}]
    # a full run replaces the column
    assert kernels.merge(rerun)[0]["rows"] == rerun[0]["rows"]
    # the rerun's environment facts (a measured per_mss) join the recorded column's
    rerun[0]["environment"]["sndbuf_per_mss"] = 4352
    assert kernels.merge(rerun, rows_only=True)[0]["environment"] == {"kernel": "6.1.0-56-amd64",
                                                                      "sndbuf_per_mss": 4352}


def test_per_mss_line_names_each_kernels_value_or_that_it_was_not_measured():
    line = kernels.per_mss_line([{"environment": {"kernel": "6.1.0-56-amd64", "sndbuf_per_mss": 4352}},
                                 {"environment": {"kernel": "6.18.44", "sndbuf_per_mss": "cannot measure: x"}},
                                 {"environment": {"kernel": "6.12"}}])
    assert line.endswith(": 6.1.0-56-amd64 4352, 6.18.44 not measured, 6.12 not measured.")


@pytest.mark.skipif(not Path("/proc/sys/kernel/bpf_stats_enabled").exists()
                    or not __import__("os").access("/proc/sys/kernel/bpf_stats_enabled", __import__("os").W_OK),
                    reason="needs root (writes kernel.bpf_stats_enabled)")
@pytest.mark.kernel
def test_bpf_stats_sysctl_is_set_back_even_when_the_check_is_interrupted(tmp_path, monkeypatch):
    """kernels_check --bpf-stats turns kernel.bpf_stats_enabled on for its run and sets it back on the
    way out — also on Ctrl-C. (It used to leave it on: on the 6.18 host a host-side check of
    2026-11-25 left it at 1, which adds two clock reads to every BPF call of every later run.)

    False-failure rate: deterministic (a sysctl read back). 0."""
    from mpcc.lab import kernels_check
    sysctl = Path("/proc/sys/kernel/bpf_stats_enabled")
    before = sysctl.read_text()
    seen = []

    def interrupted(a, result):
        seen.append(sysctl.read_text().strip())
        raise KeyboardInterrupt

    monkeypatch.setattr(kernels_check, "_check_all", interrupted)
    try:
        sysctl.write_text("0\n")
        with pytest.raises(KeyboardInterrupt):
            kernels_check.main(["balia", "--bpf-stats", "--out", str(tmp_path / "r.json")])
        assert seen == ["1"]                       # on during the check
        assert sysctl.read_text().strip() == "0"   # and back after it
    finally:
        sysctl.write_text(before)


# --- flavours, the config check and the virtiofs share (Debian's cloud kernels have no 9p) ------
_FULL = {opt: "y" for opt, _ in guestvm.REQUIRED_CONFIG}


def test_series_cover_debians_flavours_and_any_package_name():
    assert {"6.1", "6.12", "6.1-rt", "6.12-rt", "6.1-cloud", "6.12-cloud"} <= set(guestvm.SERIES)
    import re
    assert re.fullmatch(guestvm.SERIES["6.12-rt"], "linux-image-6.12.117+deb12-rt-amd64")
    assert not re.fullmatch(guestvm.SERIES["6.12"], "linux-image-6.12.117+deb12-rt-amd64")
    assert re.fullmatch(guestvm.SERIES["6.1-cloud"], "linux-image-6.1.0-56-cloud-amd64")
    assert guestvm.series_of("6.12-rt") == "6.12-rt" and guestvm.series_of("running") == "running"
    assert guestvm.series_of("linux-image-6.12.117+deb12-cloud-amd64") == "6.12.117+deb12-cloud-amd64"
    assert guestvm.series_of("5.10") is None and guestvm.series_of("linux-image-;rm") is None


def test_guest_plan_picks_9p_then_virtiofs_and_names_what_is_missing():
    nine = {**_FULL, "CONFIG_NET_9P": "m", "CONFIG_NET_9P_VIRTIO": "m", "CONFIG_9P_FS": "m", "CONFIG_VIRTIO_FS": "y"}
    assert guestvm.guest_plan(nine) == ("9p", None)
    assert guestvm.guest_plan({**_FULL, "CONFIG_VIRTIO_FS": "y"}) == ("virtiofs", None)
    share, reason = guestvm.guest_plan(_FULL)
    assert share is None and "9p" in reason and "virtiofs" in reason
    no_btf = {k: v for k, v in nine.items() if k != "CONFIG_DEBUG_INFO_BTF"}
    share, reason = guestvm.guest_plan(no_btf)
    assert share is None and "CONFIG_DEBUG_INFO_BTF" in reason and "\n" not in reason
    share, reason = guestvm.guest_plan({**nine, "CONFIG_MPTCP": "n"})
    assert share is None and "CONFIG_MPTCP (MPTCP)" in reason


def test_kernel_config_reads_the_packages_build_config(tmp_path):
    (tmp_path / "boot").mkdir()
    (tmp_path / "boot" / "config-9.9").write_text(
        "# comment\nCONFIG_MPTCP=y\n# CONFIG_NET_9P is not set\nCONFIG_HZ=250\nCONFIG_LOCALVERSION=\"-x\"\n")
    assert guestvm.kernel_config(tmp_path, "9.9") == {"CONFIG_MPTCP": "y", "CONFIG_HZ": "250",
                                                      "CONFIG_LOCALVERSION": '"-x"'}


def test_a_virtiofs_guest_shares_memory_with_two_daemons_and_mounts_them(tmp_path):
    cmd = guestvm.qemu_cmd(tmp_path, "9.9", tmp_path / "i.cpio", tmp_path, "tcg", share="virtiofs")
    joined = " ".join(cmd)
    assert "-virtfs" not in cmd
    assert f"memory-backend-memfd,id=mem,size={guestvm.GUEST_MEM_MB}M,share=on" in joined
    assert ["-m", str(guestvm.GUEST_MEM_MB)] == cmd[cmd.index("-m"):cmd.index("-m") + 2]
    for tag, sock in guestvm.virtiofs_sockets(tmp_path).items():
        assert f"path={sock}" in joined and f"tag={tag}" in joined
    assert joined.count("vhost-user-fs-pci") == 2
    nine = " ".join(guestvm.qemu_cmd(tmp_path, "9.9", tmp_path / "i.cpio", tmp_path, "tcg"))
    assert nine.count("-virtfs") == 2 and "vhost-user" not in nine


def test_the_initramfs_mounts_over_the_kernels_share(tmp_path, monkeypatch):
    monkeypatch.setattr(guestvm, "BUSYBOX", tmp_path / "busybox")
    guestvm.BUSYBOX.write_bytes(b"\x7fELF")
    (tmp_path / "lib" / "modules" / "9.9" / "kernel").mkdir(parents=True)
    for share in ("9p", "virtiofs"):
        archive = guestvm.initramfs(tmp_path, "9.9", ["true"], [], share)
        init = archive[archive.index(b"#!/bin/busybox sh"):].split(b"poweroff -f")[0].decode()
        assert "@" not in init
        root, out = guestvm.MOUNTS[share]
        assert f"if {root} hostroot $R; then" in init and f"{out} out $R/tmp/out" in init
        assert f"over {share}" in init


def test_a_checkout_under_the_guests_tmpfs_is_put_back_at_its_own_path(tmp_path, monkeypatch):
    """The guest mounts tmpfs over /tmp and /run: a checkout (or venv) there must be held by a bind
    mount before and put back at the same path after, or the venv's python is not found (exit 127)."""
    assert guestvm.hidden_paths("/work/x/.venv/bin/python", Path("/work/x")) == []
    assert guestvm.hidden_paths("/tmp/x/.venv/bin/python", Path("/tmp/x")) == ["/tmp/x"]
    assert guestvm.hidden_paths("/run/v/bin/python3", Path("/tmp/x")) == ["/tmp/x", "/run/v"]
    assert guestvm.hidden_paths("/tmp/x/.venv/bin/python", Path("/tmp/x/sub")) == ["/tmp/x/sub", "/tmp/x/.venv"]
    assert guestvm.hidden_paths("/usr/bin/python3", Path("/tmpfoo/x")) == []     # not under /tmp
    with pytest.raises(ValueError, match="fix: clone it to a plain path"):
        guestvm.hidden_paths("/usr/bin/python3", Path("/tmp/a b"))
    monkeypatch.setattr(guestvm, "BUSYBOX", tmp_path / "busybox")
    guestvm.BUSYBOX.write_bytes(b"\x7fELF")
    (tmp_path / "lib" / "modules" / "9.9" / "kernel").mkdir(parents=True)
    monkeypatch.setattr(guestvm, "ROOT", Path("/tmp/clone"))
    archive = guestvm.initramfs(tmp_path, "9.9", ["/tmp/clone/.venv/bin/python", "-m", "x"], [], "9p")
    init = archive[archive.index(b"#!/bin/busybox sh"):].split(b"poweroff -f")[0].decode()
    hold, tmpfs, back = (init.index(x) for x in ("mount -o bind $R$d /keep$d", "mount -t tmpfs tmp $R/tmp",
                                                   "mount -o bind /keep$d $R$d"))
    assert hold < tmpfs < back and init.count("for d in /tmp/clone; do") == 2
    assert "test -x \"$0\"' /tmp/clone/.venv/bin/python; then" in init


def test_a_guest_without_a_result_says_why_in_one_line(tmp_path):
    console = "mpcc-guest: cannot run the check: /tmp/x/.venv/bin/python is not visible in the guest\n"
    reason = guestvm.no_result_reason(console, "", "", tmp_path)
    assert "\n" not in reason and "cannot run the check: /tmp/x/.venv/bin/python is not visible" in reason
    log = "Traceback (most recent call last):\n  ...\nModuleNotFoundError: No module named 'mpcc'\n"
    reason = guestvm.no_result_reason("mpcc-guest: running the check on 6.12\nmpcc-guest: exit 1\n", log, "", tmp_path)
    assert "\n" not in reason and "exit 1; ModuleNotFoundError: No module named 'mpcc'" in reason


def test_virtiofsd_missing_is_one_line_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(guestvm, "virtiofsd", lambda: None)
    with pytest.raises(OSError) as e:
        guestvm.start_virtiofsd(tmp_path)
    assert "apt-get install qemu-system-common" in str(e.value) and "\n" not in str(e.value)


def test_an_unsupported_kernel_is_reported_per_algorithm_without_a_boot(monkeypatch):
    monkeypatch.setattr(guestvm, "fetch", lambda pkg: Path("/nonexistent"))
    monkeypatch.setattr(guestvm, "kernel_config", lambda tree, rel: dict(_FULL))       # no 9p, no virtiofs
    monkeypatch.setattr(guestvm, "CACHE", Path("/tmp") / f"mpcc-kernels-test-{id(monkeypatch)}")
    monkeypatch.setattr(kernels.subprocess, "Popen", lambda *a, **k: pytest.fail("booted"))
    try:
        res = kernels.run_guest("linux-image-9.9-cloud-amd64", ["balia", "lia"], 5.0, "tcg", per_boot=1)
    finally:
        shutil.rmtree(guestvm.CACHE, ignore_errors=True)
    assert [r["status"] for r in res["rows"]] == ["unsupported", "unsupported"]
    assert "cannot mount the host's files" in res["rows"][0]["reason"]
    assert kernels.table([res]).splitlines()[2].startswith("| `balia` | unsupported: kernel built without 9p")


def test_unknown_kernel_and_bad_package_flag_are_one_line_exit_2(capsys):
    assert kernels.main(["--plan", "--kernels", "6.12-xyz"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "6.12-rt" in err and "linux-image-" in err
    assert kernels.main(["--plan", "--kernels", "6.1", "--package", "linux-image-6.1.0-56-amd64"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "SERIES=NAME" in err
