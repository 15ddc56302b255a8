"""The Request reader, generated from request.avsc by oncelog.schemas.inline_reader.

Do not edit: `python -m oncelog.schemas.inline_reader` rewrites it, and
tests/schemas/test_generated_reader.py fails while it differs from the generator's
output. It is a file, not an exec'd string, so that mypyc compiles it (setup.py).
"""

import struct
from typing import Any

from oncelog.schemas import models
from oncelog.schemas.avro_read import UnsureError, read_raw, read_text

unpack_f = struct.Struct("<f").unpack_from
unpack_d = struct.Struct("<d").unpack_from

C_Request_1 = models.Request
C_Claim_8 = models.Claim
E_15 = tuple(models.Effect)
C_Heartbeat_17 = models.Heartbeat
C_Complete_19 = models.Complete
C_Fail_21 = models.Fail
C_Release_24 = models.Release
C_Cancel_25 = models.Cancel
C_Sweep_27 = models.Sweep
C_Get_28 = models.Get
C_Inherit_29 = models.Inherit
E_37 = tuple(models.Effect)
C_Approve_41 = models.Approve
C_Deny_45 = models.Deny
C_ApprovalPolicy_53 = models.ApprovalPolicy
C_ApproverKey_60 = models.ApproverKey


def read(data: bytes, pos: int) -> Any:
    count58: Any
    item59: Any
    items57: Any
    v10: Any
    v11: Any
    v12: Any
    v13: Any
    v14: Any
    v16: Any
    v18: Any
    v2: Any
    v20: Any
    v22: Any
    v23: Any
    v26: Any
    v3: Any
    v30: Any
    v31: Any
    v32: Any
    v33: Any
    v34: Any
    v35: Any
    v36: Any
    v38: Any
    v39: Any
    v4: Any
    v40: Any
    v42: Any
    v43: Any
    v44: Any
    v46: Any
    v47: Any
    v48: Any
    v49: Any
    v5: Any
    v50: Any
    v51: Any
    v52: Any
    v54: Any
    v55: Any
    v56: Any
    v6: Any
    v61: Any
    v62: Any
    v7: Any
    v9: Any
    value: Any
    size = len(data)
    b = data[pos]
    if b < 0x80 and not b & 1:
        end = pos + 1 + (b >> 1)
        if end > size:
            raise UnsureError
        v2 = data[pos + 1:end].decode()
        pos = end
    else:
        v2, pos = read_text(data, pos)
    b = data[pos]
    if b < 0x80 and not b & 1:
        end = pos + 1 + (b >> 1)
        if end > size:
            raise UnsureError
        v3 = data[pos + 1:end].decode()
        pos = end
    else:
        v3, pos = read_text(data, pos)
    b = data[pos]
    if b < 0x80 and not b & 1:
        end = pos + 1 + (b >> 1)
        if end > size:
            raise UnsureError
        v4 = data[pos + 1:end].decode()
        pos = end
    else:
        v4, pos = read_text(data, pos)
    b = data[pos]
    if b < 0x80 and not b & 1:
        end = pos + 1 + (b >> 1)
        if end > size:
            raise UnsureError
        v5 = data[pos + 1:end].decode()
        pos = end
    else:
        v5, pos = read_text(data, pos)
    b = data[pos]
    pos += 1
    if b == 0:
        v6 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v6 = data[pos + 1:end].decode()
            pos = end
        else:
            v6, pos = read_text(data, pos)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v9 = data[pos + 1:end].decode()
            pos = end
        else:
            v9, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v10 = data[pos + 1:end]
            pos = end
        else:
            v10, pos = read_raw(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v11 = data[pos + 1:end].decode()
            pos = end
        else:
            v11, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80:
            v12 = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n = b & 0x7F
            shift = 7
            pos += 1
            while True:
                b = data[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
                if shift > 63:
                    raise UnsureError
            if n >> 64:
                raise UnsureError
            v12 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b < 0x80:
            v13 = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n = b & 0x7F
            shift = 7
            pos += 1
            while True:
                b = data[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
                if shift > 63:
                    raise UnsureError
            if n >> 64:
                raise UnsureError
            v13 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b & 1 or b >= 4:
            raise UnsureError
        v14 = E_15[b >> 1]
        pos += 1
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v16 = data[pos + 1:end].decode()
            pos = end
        else:
            v16, pos = read_text(data, pos)
        v7 = C_Claim_8(v9, v10, v11, v12, v13, v14, v16)
    elif b == 2:
        b = data[pos]
        pos += 1
        if b == 0:
            v18 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80:
                v18 = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n = b & 0x7F
                shift = 7
                pos += 1
                while True:
                    b = data[pos]
                    pos += 1
                    n |= (b & 0x7F) << shift
                    if b < 0x80:
                        break
                    shift += 7
                    if shift > 63:
                        raise UnsureError
                if n >> 64:
                    raise UnsureError
                v18 = (n >> 1) ^ -(n & 1)
        else:
            raise UnsureError
        v7 = C_Heartbeat_17(v18)
    elif b == 4:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v20 = data[pos + 1:end]
            pos = end
        else:
            v20, pos = read_raw(data, pos)
        v7 = C_Complete_19(v20)
    elif b == 6:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v22 = data[pos + 1:end].decode()
            pos = end
        else:
            v22, pos = read_text(data, pos)
        b = data[pos]
        if b > 1:
            raise UnsureError
        v23 = b == 1
        pos += 1
        v7 = C_Fail_21(v22, v23)
    elif b == 8:
        v7 = C_Release_24()
    elif b == 10:
        b = data[pos]
        pos += 1
        if b == 0:
            v26 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v26 = data[pos + 1:end].decode()
                pos = end
            else:
                v26, pos = read_text(data, pos)
        else:
            raise UnsureError
        v7 = C_Cancel_25(v26)
    elif b == 12:
        v7 = C_Sweep_27()
    elif b == 14:
        v7 = C_Get_28()
    elif b == 16:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v30 = data[pos + 1:end].decode()
            pos = end
        else:
            v30, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80:
            v31 = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n = b & 0x7F
            shift = 7
            pos += 1
            while True:
                b = data[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
                if shift > 63:
                    raise UnsureError
            if n >> 64:
                raise UnsureError
            v31 = (n >> 1) ^ -(n & 1)
        if not -2147483648 <= v31 <= 2147483647:
            raise UnsureError
        b = data[pos]
        if b < 0x80:
            v32 = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n = b & 0x7F
            shift = 7
            pos += 1
            while True:
                b = data[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
                if shift > 63:
                    raise UnsureError
            if n >> 64:
                raise UnsureError
            v32 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v33 = data[pos + 1:end].decode()
            pos = end
        else:
            v33, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v34 = data[pos + 1:end]
            pos = end
        else:
            v34, pos = read_raw(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v35 = data[pos + 1:end].decode()
            pos = end
        else:
            v35, pos = read_text(data, pos)
        b = data[pos]
        if b & 1 or b >= 4:
            raise UnsureError
        v36 = E_37[b >> 1]
        pos += 1
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v38 = data[pos + 1:end]
            pos = end
        else:
            v38, pos = read_raw(data, pos)
        b = data[pos]
        if b < 0x80:
            v39 = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n = b & 0x7F
            shift = 7
            pos += 1
            while True:
                b = data[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
                if shift > 63:
                    raise UnsureError
            if n >> 64:
                raise UnsureError
            v39 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b > 1:
            raise UnsureError
        v40 = b == 1
        pos += 1
        v7 = C_Inherit_29(v30, v31, v32, v33, v34, v35, v36, v38, v39, v40)
    elif b == 18:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v42 = data[pos + 1:end].decode()
            pos = end
        else:
            v42, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v43 = data[pos + 1:end].decode()
            pos = end
        else:
            v43, pos = read_text(data, pos)
        b = data[pos]
        pos += 1
        if b == 0:
            v44 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v44 = data[pos + 1:end]
                pos = end
            else:
                v44, pos = read_raw(data, pos)
        else:
            raise UnsureError
        v7 = C_Approve_41(v42, v43, v44)
    elif b == 20:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v46 = data[pos + 1:end].decode()
            pos = end
        else:
            v46, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v47 = data[pos + 1:end].decode()
            pos = end
        else:
            v47, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v48 = data[pos + 1:end].decode()
            pos = end
        else:
            v48, pos = read_text(data, pos)
        b = data[pos]
        pos += 1
        if b == 0:
            v49 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v49 = data[pos + 1:end]
                pos = end
            else:
                v49, pos = read_raw(data, pos)
        else:
            raise UnsureError
        v7 = C_Deny_45(v46, v47, v48, v49)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v50 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80:
            v50 = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n = b & 0x7F
            shift = 7
            pos += 1
            while True:
                b = data[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
                if shift > 63:
                    raise UnsureError
            if n >> 64:
                raise UnsureError
            v50 = (n >> 1) ^ -(n & 1)
        if not -2147483648 <= v50 <= 2147483647:
            raise UnsureError
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v51 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v51 = data[pos + 1:end].decode()
            pos = end
        else:
            v51, pos = read_text(data, pos)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v52 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80:
            v54 = (b >> 1) ^ -(b & 1)
            pos += 1
        else:
            n = b & 0x7F
            shift = 7
            pos += 1
            while True:
                b = data[pos]
                pos += 1
                n |= (b & 0x7F) << shift
                if b < 0x80:
                    break
                shift += 7
                if shift > 63:
                    raise UnsureError
            if n >> 64:
                raise UnsureError
            v54 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b > 1:
            raise UnsureError
        v55 = b == 1
        pos += 1
        items57 = []
        while True:
            b = data[pos]
            if b < 0x80:
                count58 = (b >> 1) ^ -(b & 1)
                pos += 1
            else:
                n = b & 0x7F
                shift = 7
                pos += 1
                while True:
                    b = data[pos]
                    pos += 1
                    n |= (b & 0x7F) << shift
                    if b < 0x80:
                        break
                    shift += 7
                    if shift > 63:
                        raise UnsureError
                if n >> 64:
                    raise UnsureError
                count58 = (n >> 1) ^ -(n & 1)
            if count58 == 0:
                break
            if count58 < 0:
                raise UnsureError
            for _ in range(count58):
                b = data[pos]
                if b < 0x80 and not b & 1:
                    end = pos + 1 + (b >> 1)
                    if end > size:
                        raise UnsureError
                    v61 = data[pos + 1:end].decode()
                    pos = end
                else:
                    v61, pos = read_text(data, pos)
                b = data[pos]
                if b < 0x80 and not b & 1:
                    end = pos + 1 + (b >> 1)
                    if end > size:
                        raise UnsureError
                    v62 = data[pos + 1:end]
                    pos = end
                else:
                    v62, pos = read_raw(data, pos)
                item59 = tuple.__new__(C_ApproverKey_60, (v61, v62,))
                items57.append(item59)
        v56 = tuple(items57)
        v52 = tuple.__new__(C_ApprovalPolicy_53, (v54, v55, v56,))
    else:
        raise UnsureError
    value = tuple.__new__(C_Request_1, (v2, v3, v4, v5, v6, v7, v50, v51, v52,))
    if pos != size:
        raise UnsureError
    return value
