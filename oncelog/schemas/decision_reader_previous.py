"""The Decision reader, generated from history/decision.v5.avsc by oncelog.schemas.inline_reader.

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

C_Decision_1 = models.Decision
E_5 = tuple(models.Kind)
C_ExecutionState_7 = models.ExecutionState
E_12 = tuple(models.Status)
E_19 = tuple(models.Effect)
C_PreviousAttempt_37 = models.PreviousAttempt
E_44 = tuple(models.Status)
C_RecentRequest_51 = models.RecentRequest
E_54 = tuple(models.Outcome)
C_Inheritance_62 = models.Inheritance
D_approval_67 = None
E_69 = tuple(models.Outcome)
C_PreviousAttempt_83 = models.PreviousAttempt
E_90 = tuple(models.Status)


def read(data: bytes, pos: int) -> Any:
    count49: Any
    item50: Any
    items48: Any
    v10: Any
    v11: Any
    v13: Any
    v14: Any
    v15: Any
    v16: Any
    v17: Any
    v18: Any
    v2: Any
    v20: Any
    v21: Any
    v22: Any
    v23: Any
    v24: Any
    v25: Any
    v26: Any
    v27: Any
    v28: Any
    v29: Any
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
    v41: Any
    v42: Any
    v43: Any
    v45: Any
    v46: Any
    v47: Any
    v52: Any
    v53: Any
    v55: Any
    v56: Any
    v57: Any
    v58: Any
    v59: Any
    v6: Any
    v60: Any
    v61: Any
    v63: Any
    v64: Any
    v65: Any
    v66: Any
    v68: Any
    v70: Any
    v71: Any
    v72: Any
    v73: Any
    v74: Any
    v75: Any
    v76: Any
    v77: Any
    v78: Any
    v79: Any
    v8: Any
    v80: Any
    v81: Any
    v82: Any
    v84: Any
    v85: Any
    v86: Any
    v87: Any
    v88: Any
    v89: Any
    v9: Any
    v91: Any
    v92: Any
    v93: Any
    v94: Any
    v95: Any
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
    if b & 1 or b >= 22:
        raise UnsureError
    v4 = E_5[b >> 1]
    pos += 1
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
            v8 = data[pos + 1:end].decode()
            pos = end
        else:
            v8, pos = read_text(data, pos)
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
            v10 = data[pos + 1:end].decode()
            pos = end
        else:
            v10, pos = read_text(data, pos)
        b = data[pos]
        if b & 1 or b >= 14:
            raise UnsureError
        v11 = E_12[b >> 1]
        pos += 1
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
        if b < 0x80:
            v14 = (b >> 1) ^ -(b & 1)
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
            v14 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v15 = data[pos + 1:end].decode()
            pos = end
        else:
            v15, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v16 = data[pos + 1:end].decode()
            pos = end
        else:
            v16, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v17 = data[pos + 1:end]
            pos = end
        else:
            v17, pos = read_raw(data, pos)
        b = data[pos]
        if b & 1 or b >= 4:
            raise UnsureError
        v18 = E_19[b >> 1]
        pos += 1
        b = data[pos]
        if b < 0x80:
            v20 = (b >> 1) ^ -(b & 1)
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
            v20 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b < 0x80:
            v21 = (b >> 1) ^ -(b & 1)
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
            v21 = (n >> 1) ^ -(n & 1)
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
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v23 = data[pos + 1:end].decode()
            pos = end
        else:
            v23, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80:
            v24 = (b >> 1) ^ -(b & 1)
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
            v24 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b < 0x80:
            v25 = (b >> 1) ^ -(b & 1)
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
            v25 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        pos += 1
        if b == 0:
            v26 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80:
                v26 = (b >> 1) ^ -(b & 1)
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
                v26 = (n >> 1) ^ -(n & 1)
        else:
            raise UnsureError
        b = data[pos]
        if b > 1:
            raise UnsureError
        v27 = b == 1
        pos += 1
        b = data[pos]
        pos += 1
        if b == 0:
            v28 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v28 = data[pos + 1:end].decode()
                pos = end
            else:
                v28, pos = read_text(data, pos)
        else:
            raise UnsureError
        b = data[pos]
        pos += 1
        if b == 0:
            v29 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v29 = data[pos + 1:end]
                pos = end
            else:
                v29, pos = read_raw(data, pos)
        else:
            raise UnsureError
        b = data[pos]
        pos += 1
        if b == 0:
            v30 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v30 = data[pos + 1:end].decode()
                pos = end
            else:
                v30, pos = read_text(data, pos)
        else:
            raise UnsureError
        b = data[pos]
        pos += 1
        if b == 0:
            v31 = None
        elif b == 2:
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
        else:
            raise UnsureError
        b = data[pos]
        pos += 1
        if b == 0:
            v32 = None
        elif b == 2:
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
        else:
            raise UnsureError
        b = data[pos]
        pos += 1
        if b == 0:
            v33 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v33 = data[pos + 1:end].decode()
                pos = end
            else:
                v33, pos = read_text(data, pos)
        else:
            raise UnsureError
        b = data[pos]
        if b > 1:
            raise UnsureError
        v34 = b == 1
        pos += 1
        b = data[pos]
        if b > 1:
            raise UnsureError
        v35 = b == 1
        pos += 1
        b = data[pos]
        pos += 1
        if b == 0:
            v36 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80:
                v38 = (b >> 1) ^ -(b & 1)
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
                v38 = (n >> 1) ^ -(n & 1)
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v39 = data[pos + 1:end].decode()
                pos = end
            else:
                v39, pos = read_text(data, pos)
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v40 = data[pos + 1:end].decode()
                pos = end
            else:
                v40, pos = read_text(data, pos)
            b = data[pos]
            if b < 0x80:
                v41 = (b >> 1) ^ -(b & 1)
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
                v41 = (n >> 1) ^ -(n & 1)
            b = data[pos]
            pos += 1
            if b == 0:
                v42 = None
            elif b == 2:
                b = data[pos]
                if b < 0x80:
                    v42 = (b >> 1) ^ -(b & 1)
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
                    v42 = (n >> 1) ^ -(n & 1)
            else:
                raise UnsureError
            b = data[pos]
            if b & 1 or b >= 14:
                raise UnsureError
            v43 = E_44[b >> 1]
            pos += 1
            b = data[pos]
            pos += 1
            if b == 0:
                v45 = None
            elif b == 2:
                b = data[pos]
                if b < 0x80 and not b & 1:
                    end = pos + 1 + (b >> 1)
                    if end > size:
                        raise UnsureError
                    v45 = data[pos + 1:end].decode()
                    pos = end
                else:
                    v45, pos = read_text(data, pos)
            else:
                raise UnsureError
            b = data[pos]
            if b > 1:
                raise UnsureError
            v46 = b == 1
            pos += 1
            v36 = tuple.__new__(C_PreviousAttempt_37, (v38, v39, v40, v41, v42, v43, v45, v46,))
        else:
            raise UnsureError
        items48 = []
        while True:
            b = data[pos]
            if b < 0x80:
                count49 = (b >> 1) ^ -(b & 1)
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
                count49 = (n >> 1) ^ -(n & 1)
            if count49 == 0:
                break
            if count49 < 0:
                raise UnsureError
            for _ in range(count49):
                b = data[pos]
                if b < 0x80 and not b & 1:
                    end = pos + 1 + (b >> 1)
                    if end > size:
                        raise UnsureError
                    v52 = data[pos + 1:end].decode()
                    pos = end
                else:
                    v52, pos = read_text(data, pos)
                b = data[pos]
                if b & 1 or b >= 50:
                    raise UnsureError
                v53 = E_54[b >> 1]
                pos += 1
                b = data[pos]
                if b < 0x80:
                    v55 = (b >> 1) ^ -(b & 1)
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
                    v55 = (n >> 1) ^ -(n & 1)
                b = data[pos]
                if b < 0x80 and not b & 1:
                    end = pos + 1 + (b >> 1)
                    if end > size:
                        raise UnsureError
                    v56 = data[pos + 1:end].decode()
                    pos = end
                else:
                    v56, pos = read_text(data, pos)
                b = data[pos]
                if b < 0x80 and not b & 1:
                    end = pos + 1 + (b >> 1)
                    if end > size:
                        raise UnsureError
                    v57 = data[pos + 1:end].decode()
                    pos = end
                else:
                    v57, pos = read_text(data, pos)
                b = data[pos]
                if b < 0x80:
                    v58 = (b >> 1) ^ -(b & 1)
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
                    v58 = (n >> 1) ^ -(n & 1)
                b = data[pos]
                if b < 0x80 and not b & 1:
                    end = pos + 1 + (b >> 1)
                    if end > size:
                        raise UnsureError
                    v59 = data[pos + 1:end].decode()
                    pos = end
                else:
                    v59, pos = read_text(data, pos)
                item50 = tuple.__new__(C_RecentRequest_51, (v52, v53, v55, v56, v57, v58, v59,))
                items48.append(item50)
        v47 = tuple(items48)
        b = data[pos]
        if b < 0x80:
            v60 = (b >> 1) ^ -(b & 1)
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
            v60 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        pos += 1
        if b == 0:
            v61 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v63 = data[pos + 1:end].decode()
                pos = end
            else:
                v63, pos = read_text(data, pos)
            b = data[pos]
            if b < 0x80:
                v64 = (b >> 1) ^ -(b & 1)
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
                v64 = (n >> 1) ^ -(n & 1)
            if not -2147483648 <= v64 <= 2147483647:
                raise UnsureError
            b = data[pos]
            if b < 0x80:
                v65 = (b >> 1) ^ -(b & 1)
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
                v65 = (n >> 1) ^ -(n & 1)
            b = data[pos]
            if b > 1:
                raise UnsureError
            v66 = b == 1
            pos += 1
            v61 = tuple.__new__(C_Inheritance_62, (v63, v64, v65, v66,))
        else:
            raise UnsureError
        v6 = tuple.__new__(C_ExecutionState_7, (v8, v9, v10, v11, v13, v14, v15, v16, v17, v18, v20, v21, v22, v23, v24, v25, v26, v27, v28, v29, v30, v31, v32, v33, v34, v35, v36, v47, v60, v61, D_approval_67,))
    else:
        raise UnsureError
    b = data[pos]
    if b & 1 or b >= 50:
        raise UnsureError
    v68 = E_69[b >> 1]
    pos += 1
    b = data[pos]
    if b > 1:
        raise UnsureError
    v70 = b == 1
    pos += 1
    b = data[pos]
    if b > 1:
        raise UnsureError
    v71 = b == 1
    pos += 1
    b = data[pos]
    if b < 0x80:
        v72 = (b >> 1) ^ -(b & 1)
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
        v72 = (n >> 1) ^ -(n & 1)
    b = data[pos]
    pos += 1
    if b == 0:
        v73 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80:
            v73 = (b >> 1) ^ -(b & 1)
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
            v73 = (n >> 1) ^ -(n & 1)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v74 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v74 = data[pos + 1:end].decode()
            pos = end
        else:
            v74, pos = read_text(data, pos)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v75 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v75 = data[pos + 1:end].decode()
            pos = end
        else:
            v75, pos = read_text(data, pos)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v76 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v76 = data[pos + 1:end]
            pos = end
        else:
            v76, pos = read_raw(data, pos)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v77 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v77 = data[pos + 1:end].decode()
            pos = end
        else:
            v77, pos = read_text(data, pos)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v78 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v78 = data[pos + 1:end].decode()
            pos = end
        else:
            v78, pos = read_text(data, pos)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v79 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80:
            v79 = (b >> 1) ^ -(b & 1)
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
            v79 = (n >> 1) ^ -(n & 1)
    else:
        raise UnsureError
    b = data[pos]
    if b > 1:
        raise UnsureError
    v80 = b == 1
    pos += 1
    b = data[pos]
    if b > 1:
        raise UnsureError
    v81 = b == 1
    pos += 1
    b = data[pos]
    pos += 1
    if b == 0:
        v82 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80:
            v84 = (b >> 1) ^ -(b & 1)
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
            v84 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v85 = data[pos + 1:end].decode()
            pos = end
        else:
            v85, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v86 = data[pos + 1:end].decode()
            pos = end
        else:
            v86, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80:
            v87 = (b >> 1) ^ -(b & 1)
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
            v87 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        pos += 1
        if b == 0:
            v88 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80:
                v88 = (b >> 1) ^ -(b & 1)
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
                v88 = (n >> 1) ^ -(n & 1)
        else:
            raise UnsureError
        b = data[pos]
        if b & 1 or b >= 14:
            raise UnsureError
        v89 = E_90[b >> 1]
        pos += 1
        b = data[pos]
        pos += 1
        if b == 0:
            v91 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v91 = data[pos + 1:end].decode()
                pos = end
            else:
                v91, pos = read_text(data, pos)
        else:
            raise UnsureError
        b = data[pos]
        if b > 1:
            raise UnsureError
        v92 = b == 1
        pos += 1
        v82 = tuple.__new__(C_PreviousAttempt_83, (v84, v85, v86, v87, v88, v89, v91, v92,))
    else:
        raise UnsureError
    b = data[pos]
    if b < 0x80:
        v93 = (b >> 1) ^ -(b & 1)
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
        v93 = (n >> 1) ^ -(n & 1)
    if not -2147483648 <= v93 <= 2147483647:
        raise UnsureError
    b = data[pos]
    if b < 0x80:
        v94 = (b >> 1) ^ -(b & 1)
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
        v94 = (n >> 1) ^ -(n & 1)
    b = data[pos]
    if b < 0x80:
        v95 = (b >> 1) ^ -(b & 1)
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
        v95 = (n >> 1) ^ -(n & 1)
    value = tuple.__new__(C_Decision_1, (v2, v3, v4, v68, v70, v95, v6, v73, v71, v74, v75, v76, v77, v81, v82, v93, v94,))
    if pos != size:
        raise UnsureError
    return value
