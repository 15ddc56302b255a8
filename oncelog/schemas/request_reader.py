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
S_Claim_17: Any = vars(models.Claim)['tool_name'].__set__
S_Claim_18: Any = vars(models.Claim)['params'].__set__
S_Claim_19: Any = vars(models.Claim)['request_hash'].__set__
S_Claim_20: Any = vars(models.Claim)['lease_ms'].__set__
S_Claim_21: Any = vars(models.Claim)['retention_ms'].__set__
S_Claim_22: Any = vars(models.Claim)['effect'].__set__
S_Claim_23: Any = vars(models.Claim)['worker_id'].__set__
C_Heartbeat_24 = models.Heartbeat
S_Heartbeat_26: Any = vars(models.Heartbeat)['lease_ms'].__set__
C_Complete_27 = models.Complete
S_Complete_29: Any = vars(models.Complete)['result'].__set__
C_Fail_30 = models.Fail
S_Fail_33: Any = vars(models.Fail)['error'].__set__
S_Fail_34: Any = vars(models.Fail)['retryable'].__set__
C_Release_35 = models.Release
C_Cancel_36 = models.Cancel
S_Cancel_38: Any = vars(models.Cancel)['reason'].__set__
C_Sweep_39 = models.Sweep
C_Get_40 = models.Get
C_Inherit_41 = models.Inherit
E_49 = tuple(models.Effect)
S_Inherit_53: Any = vars(models.Inherit)['from_channel'].__set__
S_Inherit_54: Any = vars(models.Inherit)['from_partition'].__set__
S_Inherit_55: Any = vars(models.Inherit)['from_offset'].__set__
S_Inherit_56: Any = vars(models.Inherit)['tool_name'].__set__
S_Inherit_57: Any = vars(models.Inherit)['params'].__set__
S_Inherit_58: Any = vars(models.Inherit)['request_hash'].__set__
S_Inherit_59: Any = vars(models.Inherit)['effect'].__set__
S_Inherit_60: Any = vars(models.Inherit)['result'].__set__
S_Inherit_61: Any = vars(models.Inherit)['retention_ms'].__set__
S_Inherit_62: Any = vars(models.Inherit)['adopted'].__set__
C_Approve_63 = models.Approve
S_Approve_67: Any = vars(models.Approve)['approver'].__set__
S_Approve_68: Any = vars(models.Approve)['request_hash'].__set__
S_Approve_69: Any = vars(models.Approve)['signature'].__set__
C_Deny_70 = models.Deny
S_Deny_75: Any = vars(models.Deny)['approver'].__set__
S_Deny_76: Any = vars(models.Deny)['request_hash'].__set__
S_Deny_77: Any = vars(models.Deny)['reason'].__set__
S_Deny_78: Any = vars(models.Deny)['signature'].__set__
C_ApprovalPolicy_82 = models.ApprovalPolicy
C_ApproverKey_89 = models.ApproverKey


def read(data: bytes, pos: int) -> Any:
    count87: Any
    item88: Any
    items86: Any
    v10: Any
    v11: Any
    v12: Any
    v13: Any
    v14: Any
    v16: Any
    v2: Any
    v25: Any
    v28: Any
    v3: Any
    v31: Any
    v32: Any
    v37: Any
    v4: Any
    v42: Any
    v43: Any
    v44: Any
    v45: Any
    v46: Any
    v47: Any
    v48: Any
    v5: Any
    v50: Any
    v51: Any
    v52: Any
    v6: Any
    v64: Any
    v65: Any
    v66: Any
    v7: Any
    v71: Any
    v72: Any
    v73: Any
    v74: Any
    v79: Any
    v80: Any
    v81: Any
    v83: Any
    v84: Any
    v85: Any
    v9: Any
    v90: Any
    v91: Any
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
        v7 = object.__new__(C_Claim_8)
        S_Claim_17(v7, v9)
        S_Claim_18(v7, v10)
        S_Claim_19(v7, v11)
        S_Claim_20(v7, v12)
        S_Claim_21(v7, v13)
        S_Claim_22(v7, v14)
        S_Claim_23(v7, v16)
    elif b == 2:
        b = data[pos]
        pos += 1
        if b == 0:
            v25 = None
        elif b == 2:
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
        else:
            raise UnsureError
        v7 = object.__new__(C_Heartbeat_24)
        S_Heartbeat_26(v7, v25)
    elif b == 4:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v28 = data[pos + 1:end]
            pos = end
        else:
            v28, pos = read_raw(data, pos)
        v7 = object.__new__(C_Complete_27)
        S_Complete_29(v7, v28)
    elif b == 6:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v31 = data[pos + 1:end].decode()
            pos = end
        else:
            v31, pos = read_text(data, pos)
        b = data[pos]
        if b > 1:
            raise UnsureError
        v32 = b == 1
        pos += 1
        v7 = object.__new__(C_Fail_30)
        S_Fail_33(v7, v31)
        S_Fail_34(v7, v32)
    elif b == 8:
        v7 = C_Release_35()
    elif b == 10:
        b = data[pos]
        pos += 1
        if b == 0:
            v37 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v37 = data[pos + 1:end].decode()
                pos = end
            else:
                v37, pos = read_text(data, pos)
        else:
            raise UnsureError
        v7 = object.__new__(C_Cancel_36)
        S_Cancel_38(v7, v37)
    elif b == 12:
        v7 = C_Sweep_39()
    elif b == 14:
        v7 = C_Get_40()
    elif b == 16:
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
        if b < 0x80:
            v43 = (b >> 1) ^ -(b & 1)
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
            v43 = (n >> 1) ^ -(n & 1)
        if not -2147483648 <= v43 <= 2147483647:
            raise UnsureError
        b = data[pos]
        if b < 0x80:
            v44 = (b >> 1) ^ -(b & 1)
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
            v44 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v45 = data[pos + 1:end].decode()
            pos = end
        else:
            v45, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v46 = data[pos + 1:end]
            pos = end
        else:
            v46, pos = read_raw(data, pos)
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
        if b & 1 or b >= 4:
            raise UnsureError
        v48 = E_49[b >> 1]
        pos += 1
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v50 = data[pos + 1:end]
            pos = end
        else:
            v50, pos = read_raw(data, pos)
        b = data[pos]
        if b < 0x80:
            v51 = (b >> 1) ^ -(b & 1)
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
            v51 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b > 1:
            raise UnsureError
        v52 = b == 1
        pos += 1
        v7 = object.__new__(C_Inherit_41)
        S_Inherit_53(v7, v42)
        S_Inherit_54(v7, v43)
        S_Inherit_55(v7, v44)
        S_Inherit_56(v7, v45)
        S_Inherit_57(v7, v46)
        S_Inherit_58(v7, v47)
        S_Inherit_59(v7, v48)
        S_Inherit_60(v7, v50)
        S_Inherit_61(v7, v51)
        S_Inherit_62(v7, v52)
    elif b == 18:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v64 = data[pos + 1:end].decode()
            pos = end
        else:
            v64, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v65 = data[pos + 1:end].decode()
            pos = end
        else:
            v65, pos = read_text(data, pos)
        b = data[pos]
        pos += 1
        if b == 0:
            v66 = None
        elif b == 2:
            b = data[pos]
            if b < 0x80 and not b & 1:
                end = pos + 1 + (b >> 1)
                if end > size:
                    raise UnsureError
                v66 = data[pos + 1:end]
                pos = end
            else:
                v66, pos = read_raw(data, pos)
        else:
            raise UnsureError
        v7 = object.__new__(C_Approve_63)
        S_Approve_67(v7, v64)
        S_Approve_68(v7, v65)
        S_Approve_69(v7, v66)
    elif b == 20:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v71 = data[pos + 1:end].decode()
            pos = end
        else:
            v71, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v72 = data[pos + 1:end].decode()
            pos = end
        else:
            v72, pos = read_text(data, pos)
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v73 = data[pos + 1:end].decode()
            pos = end
        else:
            v73, pos = read_text(data, pos)
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
                v74 = data[pos + 1:end]
                pos = end
            else:
                v74, pos = read_raw(data, pos)
        else:
            raise UnsureError
        v7 = object.__new__(C_Deny_70)
        S_Deny_75(v7, v71)
        S_Deny_76(v7, v72)
        S_Deny_77(v7, v73)
        S_Deny_78(v7, v74)
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
        if not -2147483648 <= v79 <= 2147483647:
            raise UnsureError
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v80 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80 and not b & 1:
            end = pos + 1 + (b >> 1)
            if end > size:
                raise UnsureError
            v80 = data[pos + 1:end].decode()
            pos = end
        else:
            v80, pos = read_text(data, pos)
    else:
        raise UnsureError
    b = data[pos]
    pos += 1
    if b == 0:
        v81 = None
    elif b == 2:
        b = data[pos]
        if b < 0x80:
            v83 = (b >> 1) ^ -(b & 1)
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
            v83 = (n >> 1) ^ -(n & 1)
        b = data[pos]
        if b > 1:
            raise UnsureError
        v84 = b == 1
        pos += 1
        items86 = []
        while True:
            b = data[pos]
            if b < 0x80:
                count87 = (b >> 1) ^ -(b & 1)
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
                count87 = (n >> 1) ^ -(n & 1)
            if count87 == 0:
                break
            if count87 < 0:
                raise UnsureError
            for _ in range(count87):
                b = data[pos]
                if b < 0x80 and not b & 1:
                    end = pos + 1 + (b >> 1)
                    if end > size:
                        raise UnsureError
                    v90 = data[pos + 1:end].decode()
                    pos = end
                else:
                    v90, pos = read_text(data, pos)
                b = data[pos]
                if b < 0x80 and not b & 1:
                    end = pos + 1 + (b >> 1)
                    if end > size:
                        raise UnsureError
                    v91 = data[pos + 1:end]
                    pos = end
                else:
                    v91, pos = read_raw(data, pos)
                item88 = tuple.__new__(C_ApproverKey_89, (v90, v91,))
                items86.append(item88)
        v85 = tuple(items86)
        v81 = tuple.__new__(C_ApprovalPolicy_82, (v83, v84, v85,))
    else:
        raise UnsureError
    value = tuple.__new__(C_Request_1, (v2, v3, v4, v5, v6, v7, v79, v80, v81,))
    if pos != size:
        raise UnsureError
    return value
