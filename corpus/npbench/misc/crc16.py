"""CRC-16-CCITT (NPBench misc): the reflected polynomial 0x8408 from 0xFFFF,
eight data-dependent bit steps per byte on a 16-bit unsigned register, then
the complement and a byte swap. Fully sequential scalar code on unsigned
8- and 16-bit integers."""
import numpy as np
import dace as dc

N = dc.symbol("N", dtype=dc.int64)
poly: dc.uint16 = 0x8408


@dc.program
def kernel(data: dc.uint8[N]):
    crc: dc.uint16 = 0xFFFF
    for i in range(N):
        b = data[i]
        cur_byte = 0xFF & b
        for _ in range(0, 8):
            if (crc & 0x0001) ^ (cur_byte & 0x0001):
                crc = (crc >> 1) ^ poly
            else:
                crc >>= 1
            cur_byte >>= 1
    crc = (~crc & 0xFFFF)
    crc = (crc << 8) | ((crc >> 8) & 0xFF)
    return crc & 0xFFFF


@dc.program
def initialize(data: dc.uint8[N]):
    # Bytes over the whole range 0..255, like NPBench's random integers.
    for i in dc.map[0:N]:
        data[i] = (i * 167 + 13) % 256


BENCHMARK = {
    "program": "kernel",
    "init": "initialize",
    "scalars": {},
    "outputs": ["__return"],
    "presets": {
        "test": {"N": 40},
        "S": {"N": 1600},
        "M": {"N": 16000},
        "L": {"N": 160000},
        "paper": {"N": 1000000},
    },
    "tolerance": {"rtol": 0, "atol": 0, "norm_error": 0},
}
