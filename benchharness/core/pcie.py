"""PCIe generations: the one table from a lane's rate (GT/s) to its generation and line encoding.

Every reader of a PCIe link (sysfs ``current_link_speed``, ``lspci`` ``LnkSta``, ``nvidia-smi``'s
``pcie.link.gen``) turns rates into generations, and generations into usable bandwidth, here.
The encodings are those of the PCI Express Base Specifications: 8b/10b for 2.5 and 5 GT/s
(Gen1-2), 128b/130b for 8, 16 and 32 GT/s (Gen3-5), and Gen6's 256-byte FLIT, of which 242 bytes
carry TLP and DLLP payload (the other 14 are CRC and FEC). What is left is the link's usable rate
before TLP headers and flow control, which take a further 5-15 % depending on the payload size.
"""

from __future__ import annotations

#: generation -> (GT/s per lane, fraction of the raw bits that carry data)
GENERATIONS: dict[int, tuple[float, float]] = {
    1: (2.5, 8 / 10), 2: (5.0, 8 / 10), 3: (8.0, 128 / 130), 4: (16.0, 128 / 130), 5: (32.0, 128 / 130),
    6: (64.0, 242 / 256),
}
_BY_GTS = {gts: gen for gen, (gts, _) in GENERATIONS.items()}


def gen_of(gts: float | None) -> int | None:
    """``16.0`` -> 4; None for a rate that is no PCIe generation's (or None)."""
    return _BY_GTS.get(float(gts)) if gts is not None else None


def gts_of(gen: int | float | None) -> float | None:
    """4 -> ``16.0``; None for an unknown generation."""
    found = GENERATIONS.get(int(gen)) if gen is not None else None
    return found[0] if found else None


def usable_gbps(gts: float | None, width: int | None) -> float | None:
    """Usable link bandwidth in Gbit/s, one direction: GT/s x lanes x encoding (Gen4 x16: 252.06)."""
    gen = gen_of(gts)
    if gen is None or not width:
        return None
    rate, encoding = GENERATIONS[gen]
    return rate * int(width) * encoding
