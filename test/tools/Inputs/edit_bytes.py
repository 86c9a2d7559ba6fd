"""edit_bytes.py IN OUT (flip OFFSET | replace OLD NEW): writes IN to OUT with one byte
flipped (OFFSET may be 'middle') or the first OLD replaced by NEW of the same length."""
import sys

data = bytearray(open(sys.argv[1], "rb").read())
if sys.argv[3] == "flip":
    at = len(data) // 2 if sys.argv[4] == "middle" else int(sys.argv[4])
    data[at] ^= 0x01
else:
    old, new = sys.argv[4].encode(), sys.argv[5].encode()
    assert len(old) == len(new) and old in data, "OLD must occur and match NEW's length"
    at = data.index(old)
    data[at:at + len(old)] = new
open(sys.argv[2], "wb").write(bytes(data))
