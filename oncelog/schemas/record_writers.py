"""The Avro body writers, generated from the schemas by oncelog.schemas.record_writer.

Do not edit: `python -m oncelog.schemas.record_writer` rewrites it, and
tests/schemas/test_generated_writers.py fails while it differs from the generator's
output. It is a file, not an exec'd string, so that mypyc compiles it (setup.py).
"""

from collections.abc import Callable
from typing import Any

from oncelog.schemas import models, previous
from oncelog.schemas.avro_write import (
    FALSE,
    NULL,
    SOME,
    TRUE,
    StateBodies,
    array,
    blob,
    branch,
    memoized,
    pack_d,
    pack_f,
    text,
)
from oncelog.schemas.avro_write import write_long as long



def write_PreviousAttempt_35(o: Any) -> bytes:
    (f36, f37, f38, f39, f40, f41, f42, f43,) = o
    return b''.join((long(f36), text(f37), text(f38), long(f39), (NULL if f40 is None else SOME + long(f40)), E_44[f41], (NULL if f42 is None else SOME + text(f42)), (TRUE if f43 else FALSE), ))


def write_RecentRequest_45(o: Any) -> bytes:
    (f46, f47, f48, f49, f50, f51, f52,) = o
    return b''.join((text(f46), E_53[f47], long(f48), text(f49), text(f50), long(f51), text(f52), ))


def write_Inheritance_54(o: Any) -> bytes:
    (f55, f56, f57, f58,) = o
    return b''.join((text(f55), long(f56), long(f57), (TRUE if f58 else FALSE), ))


def write_Approval_59(o: Any) -> bytes:
    (f60, f61, f62, f63, f64, f65, f66, f67,) = o
    return b''.join((long(f60), long(f61), text(f62), (TRUE if f63 else FALSE), (TRUE if f64 else FALSE), (NULL if f65 is None else SOME + text(f65)), (NULL if f66 is None else SOME + long(f66)), (NULL if f67 is None else SOME + text(f67)), ))


def write_ExecutionState_1(o: Any) -> bytes:
    (f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32,) = o
    return b''.join((text(f2), text(f3), text(f4), E_33[f5], long(f6), long(f7), text(f8), text(f9), blob(f10), E_34[f11], long(f12), long(f13), text(f14), text(f15), long(f16), long(f17), (NULL if f18 is None else SOME + long(f18)), (TRUE if f19 else FALSE), (NULL if f20 is None else SOME + text(f20)), (NULL if f21 is None else SOME + blob(f21)), (NULL if f22 is None else SOME + text(f22)), (NULL if f23 is None else SOME + long(f23)), (NULL if f24 is None else SOME + long(f24)), (NULL if f25 is None else SOME + text(f25)), (TRUE if f26 else FALSE), (TRUE if f27 else FALSE), (NULL if f28 is None else SOME + write_PreviousAttempt_35(f28)), array(f29, memoized(write_RecentRequest_45)), long(f30), (NULL if f31 is None else SOME + write_Inheritance_54(f31)), (NULL if f32 is None else SOME + write_Approval_59(f32)), ))
state: Callable[[Any], bytes] = write_ExecutionState_1


def write_Claim_78(o: Any) -> bytes:
    f79 = o.tool_name
    f80 = o.params
    f81 = o.request_hash
    f82 = o.lease_ms
    f83 = o.retention_ms
    f84 = o.effect
    f85 = o.worker_id
    return b''.join((text(f79), blob(f80), text(f81), long(f82), long(f83), E_86[f84], text(f85), ))


def write_Heartbeat_87(o: Any) -> bytes:
    f88 = o.lease_ms
    return b''.join(((NULL if f88 is None else SOME + long(f88)), ))


def write_Complete_89(o: Any) -> bytes:
    f90 = o.result
    return b''.join((blob(f90), ))


def write_Fail_91(o: Any) -> bytes:
    f92 = o.error
    f93 = o.retryable
    return b''.join((text(f92), (TRUE if f93 else FALSE), ))


def write_Release_94(o: Any) -> bytes:
    return b''


def write_Cancel_95(o: Any) -> bytes:
    f96 = o.reason
    return b''.join(((NULL if f96 is None else SOME + text(f96)), ))


def write_Sweep_97(o: Any) -> bytes:
    return b''


def write_Get_98(o: Any) -> bytes:
    return b''


def write_Inherit_99(o: Any) -> bytes:
    f100 = o.from_channel
    f101 = o.from_partition
    f102 = o.from_offset
    f103 = o.tool_name
    f104 = o.params
    f105 = o.request_hash
    f106 = o.effect
    f107 = o.result
    f108 = o.retention_ms
    f109 = o.adopted
    return b''.join((text(f100), long(f101), long(f102), text(f103), blob(f104), text(f105), E_110[f106], blob(f107), long(f108), (TRUE if f109 else FALSE), ))


def write_Approve_111(o: Any) -> bytes:
    f112 = o.approver
    f113 = o.request_hash
    return b''.join((text(f112), text(f113), ))


def write_Deny_114(o: Any) -> bytes:
    f115 = o.approver
    f116 = o.request_hash
    f117 = o.reason
    return b''.join((text(f115), text(f116), text(f117), ))


def write_ApprovalPolicy_119(o: Any) -> bytes:
    (f120, f121,) = o
    return b''.join((long(f120), (TRUE if f121 else FALSE), ))


def write_Request_68(o: Any) -> bytes:
    (f69, f70, f71, f72, f73, f74, f75, f76, f77,) = o
    return b''.join((blob(f69.encode()), text(f70), text(f71), text(f72), (NULL if f73 is None else SOME + text(f73)), U_118[type(f74)](f74), (NULL if f75 is None else SOME + long(f75)), (NULL if f76 is None else SOME + text(f76)), (NULL if f77 is None else SOME + write_ApprovalPolicy_119(f77)), ))
request: Callable[[Any], bytes] = write_Request_68


def write_Claim_131(o: Any) -> bytes:
    f132 = o.tool_name
    f133 = o.params
    f134 = o.request_hash
    f135 = o.lease_ms
    f136 = o.retention_ms
    f137 = o.effect
    f138 = o.worker_id
    return b''.join((text(f132), blob(f133), text(f134), long(f135), long(f136), E_139[f137], text(f138), ))


def write_Heartbeat_140(o: Any) -> bytes:
    f141 = o.lease_ms
    return b''.join(((NULL if f141 is None else SOME + long(f141)), ))


def write_Complete_142(o: Any) -> bytes:
    f143 = o.result
    return b''.join((blob(f143), ))


def write_Fail_144(o: Any) -> bytes:
    f145 = o.error
    f146 = o.retryable
    return b''.join((text(f145), (TRUE if f146 else FALSE), ))


def write_Release_147(o: Any) -> bytes:
    return b''


def write_Cancel_148(o: Any) -> bytes:
    f149 = o.reason
    return b''.join(((NULL if f149 is None else SOME + text(f149)), ))


def write_Sweep_150(o: Any) -> bytes:
    return b''


def write_Get_151(o: Any) -> bytes:
    return b''


def write_Inherit_152(o: Any) -> bytes:
    f153 = o.from_channel
    f154 = o.from_partition
    f155 = o.from_offset
    f156 = o.tool_name
    f157 = o.params
    f158 = o.request_hash
    f159 = o.effect
    f160 = o.result
    f161 = o.retention_ms
    f162 = o.adopted
    return b''.join((text(f153), long(f154), long(f155), text(f156), blob(f157), text(f158), E_163[f159], blob(f160), long(f161), (TRUE if f162 else FALSE), ))


def write_Request_122(o: Any) -> bytes:
    f123 = o.request_id
    f124 = o.operation_id
    f125 = o.channel_id
    f126 = o.key_name
    f127 = o.claim_token
    f128 = o.body
    f129 = o.reply_partition
    f130 = o.reconciled
    return b''.join((blob(f123.encode()), text(f124), text(f125), text(f126), (NULL if f127 is None else SOME + text(f127)), U_164[type(f128)](f128), (NULL if f129 is None else SOME + long(f129)), (NULL if f130 is None else SOME + text(f130)), ))
previous_request: Callable[[Any], bytes] = write_Request_122


def write_ExecutionSnapshot_165(o: Any) -> bytes:
    (f166, f167, f168, f169, f170, f171,) = o
    return b''.join((NESTED_172(f166), long(f167), long(f168), text(f169), E_173[f170], long(f171), ))
snapshot: Callable[[Any], bytes] = write_ExecutionSnapshot_165


def write_PreviousAttempt_199(o: Any) -> bytes:
    (f200, f201, f202, f203, f204, f205, f206, f207,) = o
    return b''.join((long(f200), text(f201), text(f202), long(f203), (NULL if f204 is None else SOME + long(f204)), E_208[f205], (NULL if f206 is None else SOME + text(f206)), (TRUE if f207 else FALSE), ))


def write_Decision_174(o: Any) -> bytes:
    f175 = o.request_id
    f176 = o.operation_id
    f177 = o.kind
    f178 = o.state
    f179 = o.outcome
    f180 = o.changed
    f181 = o.retried
    f182 = o.version
    f183 = o.epoch
    f184 = o.stored_hash
    f185 = o.request_hash
    f186 = o.result
    f187 = o.error
    f188 = o.holder_worker_id
    f189 = o.lease_deadline_ms
    f190 = o.cancel_requested
    f191 = o.duplicate_effect_suspected
    f192 = o.previous
    f193 = o.source_partition
    f194 = o.source_offset
    f195 = o.log_time_ms
    return b''.join((text(f175), text(f176), E_196[f177], (NULL if f178 is None else SOME + NESTED_197(f178)), E_198[f179], (TRUE if f180 else FALSE), (TRUE if f181 else FALSE), long(f182), (NULL if f183 is None else SOME + long(f183)), (NULL if f184 is None else SOME + text(f184)), (NULL if f185 is None else SOME + text(f185)), (NULL if f186 is None else SOME + blob(f186)), (NULL if f187 is None else SOME + text(f187)), (NULL if f188 is None else SOME + text(f188)), (NULL if f189 is None else SOME + long(f189)), (TRUE if f190 else FALSE), (TRUE if f191 else FALSE), (NULL if f192 is None else SOME + write_PreviousAttempt_199(f192)), long(f193), long(f194), long(f195), ))
decision: Callable[[Any], bytes] = write_Decision_174


def write_ExecutionSnapshot_209(o: Any) -> bytes:
    (f210, f211, f212, f213, f214, f215,) = o
    return b''.join((NESTED_216(f210), long(f211), long(f212), text(f213), E_217[f214], long(f215), ))
previous_snapshot: Callable[[Any], bytes] = write_ExecutionSnapshot_209


def write_PreviousAttempt_243(o: Any) -> bytes:
    (f244, f245, f246, f247, f248, f249, f250, f251,) = o
    return b''.join((long(f244), text(f245), text(f246), long(f247), (NULL if f248 is None else SOME + long(f248)), E_252[f249], (NULL if f250 is None else SOME + text(f250)), (TRUE if f251 else FALSE), ))


def write_Decision_218(o: Any) -> bytes:
    f219 = o.request_id
    f220 = o.operation_id
    f221 = o.kind
    f222 = o.state
    f223 = o.outcome
    f224 = o.changed
    f225 = o.retried
    f226 = o.version
    f227 = o.epoch
    f228 = o.stored_hash
    f229 = o.request_hash
    f230 = o.result
    f231 = o.error
    f232 = o.holder_worker_id
    f233 = o.lease_deadline_ms
    f234 = o.cancel_requested
    f235 = o.duplicate_effect_suspected
    f236 = o.previous
    f237 = o.source_partition
    f238 = o.source_offset
    f239 = o.log_time_ms
    return b''.join((text(f219), text(f220), E_240[f221], (NULL if f222 is None else SOME + NESTED_241(f222)), E_242[f223], (TRUE if f224 else FALSE), (TRUE if f225 else FALSE), long(f226), (NULL if f227 is None else SOME + long(f227)), (NULL if f228 is None else SOME + text(f228)), (NULL if f229 is None else SOME + text(f229)), (NULL if f230 is None else SOME + blob(f230)), (NULL if f231 is None else SOME + text(f231)), (NULL if f232 is None else SOME + text(f232)), (NULL if f233 is None else SOME + long(f233)), (TRUE if f234 else FALSE), (TRUE if f235 else FALSE), (NULL if f236 is None else SOME + write_PreviousAttempt_243(f236)), long(f237), long(f238), long(f239), ))
previous_decision: Callable[[Any], bytes] = write_Decision_218

STATE_BODIES = StateBodies(state)
"""The bodies of recent states: a decision, its snapshot and the state blob share one."""


def previous_state(o: Any) -> bytes:
    """The previous layout's body of a state that fits it."""
    return previous.state_body(STATE_BODIES.body(o))

E_33: Any = {'CLAIMED': b'\x00', 'COMPLETED': b'\x02', 'FAILED': b'\x04', 'EXPIRED': b'\x06', 'AWAITING_APPROVAL': b'\x08', 'APPROVED': b'\n', 'DENIED': b'\x0c'}
E_34: Any = {'pure': b'\x00', 'external': b'\x02'}
E_44: Any = {'CLAIMED': b'\x00', 'COMPLETED': b'\x02', 'FAILED': b'\x04', 'EXPIRED': b'\x06', 'AWAITING_APPROVAL': b'\x08', 'APPROVED': b'\n', 'DENIED': b'\x0c'}
E_53: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&', 'awaiting_approval': b'(', 'approved': b'*', 'denied': b',', 'approval_expired': b'.', 'approval_refused': b'0'}
E_86: Any = {'pure': b'\x00', 'external': b'\x02'}
E_110: Any = {'pure': b'\x00', 'external': b'\x02'}
U_118: Any = {models.Claim: branch(b'\x00', write_Claim_78), models.Heartbeat: branch(b'\x02', write_Heartbeat_87), models.Complete: branch(b'\x04', write_Complete_89), models.Fail: branch(b'\x06', write_Fail_91), models.Release: branch(b'\x08', write_Release_94), models.Cancel: branch(b'\n', write_Cancel_95), models.Sweep: branch(b'\x0c', write_Sweep_97), models.Get: branch(b'\x0e', write_Get_98), models.Inherit: branch(b'\x10', write_Inherit_99), models.Approve: branch(b'\x12', write_Approve_111), models.Deny: branch(b'\x14', write_Deny_114)}
E_139: Any = {'pure': b'\x00', 'external': b'\x02'}
E_163: Any = {'pure': b'\x00', 'external': b'\x02'}
U_164: Any = {models.Claim: branch(b'\x00', write_Claim_131), models.Heartbeat: branch(b'\x02', write_Heartbeat_140), models.Complete: branch(b'\x04', write_Complete_142), models.Fail: branch(b'\x06', write_Fail_144), models.Release: branch(b'\x08', write_Release_147), models.Cancel: branch(b'\n', write_Cancel_148), models.Sweep: branch(b'\x0c', write_Sweep_150), models.Get: branch(b'\x0e', write_Get_151), models.Inherit: branch(b'\x10', write_Inherit_152)}
NESTED_172: Any = STATE_BODIES.body
E_173: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&', 'awaiting_approval': b'(', 'approved': b'*', 'denied': b',', 'approval_expired': b'.', 'approval_refused': b'0'}
E_196: Any = {'claim': b'\x00', 'heartbeat': b'\x02', 'complete': b'\x04', 'fail': b'\x06', 'release': b'\x08', 'cancel': b'\n', 'sweep': b'\x0c', 'get': b'\x0e', 'inherit': b'\x10', 'approve': b'\x12', 'deny': b'\x14'}
NESTED_197: Any = STATE_BODIES.body
E_198: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&', 'awaiting_approval': b'(', 'approved': b'*', 'denied': b',', 'approval_expired': b'.', 'approval_refused': b'0'}
E_208: Any = {'CLAIMED': b'\x00', 'COMPLETED': b'\x02', 'FAILED': b'\x04', 'EXPIRED': b'\x06', 'AWAITING_APPROVAL': b'\x08', 'APPROVED': b'\n', 'DENIED': b'\x0c'}
NESTED_216: Any = previous_state
E_217: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&'}
E_240: Any = {'claim': b'\x00', 'heartbeat': b'\x02', 'complete': b'\x04', 'fail': b'\x06', 'release': b'\x08', 'cancel': b'\n', 'sweep': b'\x0c', 'get': b'\x0e', 'inherit': b'\x10'}
NESTED_241: Any = previous_state
E_242: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&'}
E_252: Any = {'CLAIMED': b'\x00', 'COMPLETED': b'\x02', 'FAILED': b'\x04', 'EXPIRED': b'\x06'}
