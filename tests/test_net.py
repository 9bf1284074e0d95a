"""Sockets and the loopback card, in the guest.

socktest itself runs in tests/test_userproc.py (guest and host); here:
the card's receive interrupt is taken by the CPU named on the command
line (netirq=N), so the receive-side work is charged there, on vanilla
and colored kernels.
"""

import re

import pytest

from tests.test_userproc import BUILD, assert_passed, boot, built  # noqa: F401


def net_line(out):
    m = re.search(r"^net: irq cpu (\d+);(.*)$", out, re.M)
    assert m, out[-2000:]
    per = {int(c): (int(i), int(p)) for c, i, p in
           re.findall(r"cpu(\d+) (\d+) irqs (\d+) packets;", m.group(2))}
    return int(m.group(1)), per


@pytest.mark.parametrize("kernel,cpus,irq", [("vanilla-l32", 4, 2), ("c32-b17-l32", 4, 1),
                                             ("vanilla-l32", 2, 0)])
def test_receive_interrupts_go_to_the_chosen_cpu(built, kernel, cpus, irq):
    rc, out = boot(BUILD / "kernels" / kernel / "kernel.mb.elf", "/bin/socktest",
                   cpus=cpus, extra=f"netirq={irq}")
    assert_passed(rc, out, "socktest")
    cpu, per = net_line(out)
    assert cpu == irq and len(per) == cpus
    # 6 x 100 KiB each way in MSS packets, plus connections and FINs
    assert per[irq][1] > 2 * 6 * 102400 // 1460
    assert per[irq][0] <= per[irq][1]          # a burst shares an interrupt
    assert all(per[c] == (0, 0) for c in per if c != irq)


def test_a_bad_irq_cpu_falls_back_to_cpu0(built):
    rc, out = boot(BUILD / "kernels" / "vanilla-l32" / "kernel.mb.elf", "/bin/socktest",
                   cpus=2, extra="netirq=7")
    assert_passed(rc, out, "socktest")
    assert net_line(out)[0] == 0
