"""The kernel command line: any length the kernel keeps boots, a longer one
is refused by the host before anything is built or booted, and by the kernel
itself (a panic, never a silent cut) when the host is bypassed.

A line longer than printk's buffer used to hang the testbed kernel in its
boot banner: the formatter stopped advancing along a string it could no
longer store.  Every run whose options added up past about 228 characters
hung until its timeout.
"""

import dataclasses

import pytest

from colorsim.cli import main as cli_main
from colorsim.describe.machine import get_machine
from colorsim.describe.runspec import (CMDLINE_MAX, INITARGS_MAX, RunSpec,
                                       Workload)
from colorsim.describe.variants import parse_variant
from colorsim.errors import ConfigError, RunError
from colorsim.run import runner

QUIET = dict(progress=lambda *_: None)


@dataclasses.dataclass(frozen=True)
class PaddedSpec(RunSpec):
    """A run whose command line carries a word the kernel ignores, so the
    line can be made as long as a test needs."""
    pad: int = 0

    def _kernel_cmdline(self, lapic_hz):
        return super()._kernel_cmdline(lapic_hz) + " pad=" + "x" * self.pad


@dataclasses.dataclass(frozen=True)
class UncheckedSpec(PaddedSpec):
    """The same, with the host's check bypassed: what the kernel does."""

    def kernel_cmdline(self, lapic_hz):
        return self._kernel_cmdline(lapic_hz)


def web_spec(cls=PaddedSpec, pad=0, **work):
    m = get_machine("ppro4").with_cpus(2)
    w = Workload(program="/bin/web", client_cpus=2, warmup_ticks=2, roi_ticks=4,
                 args="--httpd,4,--clients,2,--requests,2", **work)
    return cls(m, parse_variant("vanilla", m), w, timeout_s=120, pad=pad)


def test_the_longest_line_the_kernel_keeps_boots_whole(tmp_path):
    probe = web_spec(seed=2**64 - 1)       # the widest seed, kept whole too
    lapic_hz = 1_000_000_000
    short = len(probe.kernel_cmdline(lapic_hz))
    s = dataclasses.replace(probe, pad=CMDLINE_MAX - short)   # short has " pad="
    line = s.kernel_cmdline(lapic_hz)
    assert len(line) == CMDLINE_MAX        # far past printk's 256-byte line
    run = runner.run(s, name="long", out=tmp_path, **QUIET)
    console = (run / "console.log").read_text()
    assert f'cmdline "{line}"' in console  # the banner writes it whole
    assert "roi: end" in console
    # the catalog holds the widest seed (it once overflowed a signed column)
    from colorsim.results.catalog import Catalog, rebuild
    rebuild(tmp_path)
    assert list(Catalog(tmp_path).runs()["seed"]) == [2**64 - 1]


def test_a_longer_line_is_refused_before_boot(tmp_path):
    s = web_spec(pad=CMDLINE_MAX)
    with pytest.raises(ConfigError, match=rf"more than the {CMDLINE_MAX} .*CMDLINE_MAX"):
        runner.run(s, name="too-long", out=tmp_path, **QUIET)
    assert not list(tmp_path.iterdir())    # nothing was written


def test_the_kernel_panics_on_a_line_it_cannot_keep(tmp_path):
    s = web_spec(UncheckedSpec, pad=CMDLINE_MAX)
    with pytest.raises(RunError, match="panicked") as e:
        runner.run(s, name="k", out=tmp_path, **QUIET)
    assert f"longer than the {CMDLINE_MAX} this kernel takes" in str(e.value)


def test_program_arguments_longer_than_initargs_are_refused(capsys, tmp_path):
    args = ",".join(["--verbose"] * (INITARGS_MAX // 10 + 1))
    rc = cli_main(["run", "--kernel", "vanilla", "--workload", "roitest",
                   f"--args={args}", "--dry-run", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert f"at most {INITARGS_MAX} characters, what the testbed kernel keeps" in err
    assert len(err.strip().splitlines()) == 1


def test_linux24_lines_are_held_to_its_command_line_size():
    m = get_machine("ppro4")
    s = PaddedSpec(m, parse_variant("linux24:vanilla", m), Workload(tasks=16),
                   pad=100)
    assert len(s.kernel_cmdline(1_000_000_000)) <= 255
    s = dataclasses.replace(s, pad=200)
    with pytest.raises(ConfigError, match="COMMAND_LINE_SIZE"):
        s.kernel_cmdline(1_000_000_000)
