"""The Avro body writers, generated from the schemas by oncelog.schemas.record_writer.

Do not edit: `python -m oncelog.schemas.record_writer` rewrites it, and
tests/schemas/test_generated_writers.py fails while it differs from the generator's
output. It is a file, not an exec'd string, so that mypyc compiles it (setup.py).
"""

from collections.abc import Callable
from typing import Any

from oncelog.schemas import decision_derived, models, previous
from oncelog.schemas.avro_write import (
    FALSE,
    NULL,
    SOME,
    TRUE,
    StateBodies,
    array,
    blob,
    pack_d,
    pack_f,
    prefixed,
    record_array,
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


def write_ApproverKey_69(o: Any) -> bytes:
    (f70, f71,) = o
    return b''.join((text(f70), blob(f71), ))


def write_Approval_59(o: Any) -> bytes:
    (f60, f61, f62, f63, f64, f65, f66, f67, f68,) = o
    return b''.join((long(f60), long(f61), text(f62), (TRUE if f63 else FALSE), (TRUE if f64 else FALSE), (NULL if f65 is None else SOME + text(f65)), (NULL if f66 is None else SOME + long(f66)), (NULL if f67 is None else SOME + text(f67)), record_array(f68, write_ApproverKey_69), ))


def write_ExecutionState_1(o: Any) -> bytes:
    (f2, f3, f4, f5, f6, f7, f8, f9, f10, f11, f12, f13, f14, f15, f16, f17, f18, f19, f20, f21, f22, f23, f24, f25, f26, f27, f28, f29, f30, f31, f32,) = o
    return b''.join((text(f2), text(f3), text(f4), E_33[f5], long(f6), long(f7), text(f8), text(f9), blob(f10), E_34[f11], long(f12), long(f13), text(f14), text(f15), long(f16), long(f17), (NULL if f18 is None else SOME + long(f18)), (TRUE if f19 else FALSE), (NULL if f20 is None else SOME + text(f20)), (NULL if f21 is None else SOME + blob(f21)), (NULL if f22 is None else SOME + text(f22)), (NULL if f23 is None else SOME + long(f23)), (NULL if f24 is None else SOME + long(f24)), (NULL if f25 is None else SOME + text(f25)), (TRUE if f26 else FALSE), (TRUE if f27 else FALSE), (NULL if f28 is None else SOME + write_PreviousAttempt_35(f28)), record_array(f29, write_RecentRequest_45), long(f30), (NULL if f31 is None else SOME + write_Inheritance_54(f31)), (NULL if f32 is None else SOME + write_Approval_59(f32)), ))
state: Callable[[Any], bytes] = write_ExecutionState_1


def write_Claim_82(o: Any) -> bytes:
    f83 = o.tool_name
    f84 = o.params
    f85 = o.request_hash
    f86 = o.lease_ms
    f87 = o.retention_ms
    f88 = o.effect
    f89 = o.worker_id
    return b''.join((text(f83), blob(f84), text(f85), long(f86), long(f87), E_90[f88], text(f89), ))


def write_Heartbeat_91(o: Any) -> bytes:
    f92 = o.lease_ms
    return b''.join(((NULL if f92 is None else SOME + long(f92)), ))


def write_Complete_93(o: Any) -> bytes:
    f94 = o.result
    return b''.join((blob(f94), ))


def write_Fail_95(o: Any) -> bytes:
    f96 = o.error
    f97 = o.retryable
    return b''.join((text(f96), (TRUE if f97 else FALSE), ))


def write_Release_98(o: Any) -> bytes:
    return b''


def write_Cancel_99(o: Any) -> bytes:
    f100 = o.reason
    return b''.join(((NULL if f100 is None else SOME + text(f100)), ))


def write_Sweep_101(o: Any) -> bytes:
    return b''


def write_Get_102(o: Any) -> bytes:
    return b''


def write_Inherit_103(o: Any) -> bytes:
    f104 = o.from_channel
    f105 = o.from_partition
    f106 = o.from_offset
    f107 = o.tool_name
    f108 = o.params
    f109 = o.request_hash
    f110 = o.effect
    f111 = o.result
    f112 = o.retention_ms
    f113 = o.adopted
    return b''.join((text(f104), long(f105), long(f106), text(f107), blob(f108), text(f109), E_114[f110], blob(f111), long(f112), (TRUE if f113 else FALSE), ))


def write_Approve_115(o: Any) -> bytes:
    f116 = o.approver
    f117 = o.request_hash
    f118 = o.signature
    return b''.join((text(f116), text(f117), (NULL if f118 is None else SOME + blob(f118)), ))


def write_Deny_119(o: Any) -> bytes:
    f120 = o.approver
    f121 = o.request_hash
    f122 = o.reason
    f123 = o.signature
    return b''.join((text(f120), text(f121), text(f122), (NULL if f123 is None else SOME + blob(f123)), ))


def write_ApproverKey_129(o: Any) -> bytes:
    (f130, f131,) = o
    return b''.join((text(f130), blob(f131), ))


def write_ApprovalPolicy_125(o: Any) -> bytes:
    (f126, f127, f128,) = o
    return b''.join((long(f126), (TRUE if f127 else FALSE), record_array(f128, write_ApproverKey_129), ))


def write_Request_72(o: Any) -> bytes:
    (f73, f74, f75, f76, f77, f78, f79, f80, f81,) = o
    return b''.join((blob(f73.encode()), text(f74), text(f75), text(f76), (NULL if f77 is None else SOME + text(f77)), U_124[type(f78)](f78), (NULL if f79 is None else SOME + long(f79)), (NULL if f80 is None else SOME + text(f80)), (NULL if f81 is None else SOME + write_ApprovalPolicy_125(f81)), ))
request: Callable[[Any], bytes] = write_Request_72


def write_Claim_141(o: Any) -> bytes:
    f142 = o.tool_name
    f143 = o.params
    f144 = o.request_hash
    f145 = o.lease_ms
    f146 = o.retention_ms
    f147 = o.effect
    f148 = o.worker_id
    return b''.join((text(f142), blob(f143), text(f144), long(f145), long(f146), E_149[f147], text(f148), ))


def write_Heartbeat_150(o: Any) -> bytes:
    f151 = o.lease_ms
    return b''.join(((NULL if f151 is None else SOME + long(f151)), ))


def write_Complete_152(o: Any) -> bytes:
    f153 = o.result
    return b''.join((blob(f153), ))


def write_Fail_154(o: Any) -> bytes:
    f155 = o.error
    f156 = o.retryable
    return b''.join((text(f155), (TRUE if f156 else FALSE), ))


def write_Release_157(o: Any) -> bytes:
    return b''


def write_Cancel_158(o: Any) -> bytes:
    f159 = o.reason
    return b''.join(((NULL if f159 is None else SOME + text(f159)), ))


def write_Sweep_160(o: Any) -> bytes:
    return b''


def write_Get_161(o: Any) -> bytes:
    return b''


def write_Inherit_162(o: Any) -> bytes:
    f163 = o.from_channel
    f164 = o.from_partition
    f165 = o.from_offset
    f166 = o.tool_name
    f167 = o.params
    f168 = o.request_hash
    f169 = o.effect
    f170 = o.result
    f171 = o.retention_ms
    f172 = o.adopted
    return b''.join((text(f163), long(f164), long(f165), text(f166), blob(f167), text(f168), E_173[f169], blob(f170), long(f171), (TRUE if f172 else FALSE), ))


def write_Request_132(o: Any) -> bytes:
    f133 = o.request_id
    f134 = o.operation_id
    f135 = o.channel_id
    f136 = o.key_name
    f137 = o.claim_token
    f138 = o.body
    f139 = o.reply_partition
    f140 = o.reconciled
    return b''.join((blob(f133.encode()), text(f134), text(f135), text(f136), (NULL if f137 is None else SOME + text(f137)), U_174[type(f138)](f138), (NULL if f139 is None else SOME + long(f139)), (NULL if f140 is None else SOME + text(f140)), ))
previous_request: Callable[[Any], bytes] = write_Request_132


def write_ExecutionSnapshot_175(o: Any) -> bytes:
    (f176, f177, f178, f179, f180, f181,) = o
    return b''.join((NESTED_182(f176), long(f177), long(f178), text(f179), E_183[f180], long(f181), ))
snapshot: Callable[[Any], bytes] = write_ExecutionSnapshot_175


def write_PreviousAttempt_209(o: Any) -> bytes:
    (f210, f211, f212, f213, f214, f215, f216, f217,) = o
    return b''.join((long(f210), text(f211), text(f212), long(f213), (NULL if f214 is None else SOME + long(f214)), E_218[f215], (NULL if f216 is None else SOME + text(f216)), (TRUE if f217 else FALSE), ))


def write_Decision_184(o: Any) -> bytes:
    f185 = o.request_id
    f186 = o.operation_id
    f187 = o.kind
    f188 = o.state
    f189 = o.outcome
    f190 = o.changed
    f191 = o.retried
    f192 = decision_derived.version(o)
    f193 = o.epoch
    f194 = o.stored_hash
    f195 = o.request_hash
    f196 = o.result
    f197 = o.error
    f198 = decision_derived.holder_worker_id(o)
    f199 = decision_derived.lease_deadline_ms(o)
    f200 = decision_derived.cancel_requested(o)
    f201 = o.duplicate_effect_suspected
    f202 = o.previous
    f203 = o.source_partition
    f204 = o.source_offset
    f205 = o.log_time_ms
    return b''.join((text(f185), text(f186), E_206[f187], (NULL if f188 is None else SOME + NESTED_207(f188)), E_208[f189], (TRUE if f190 else FALSE), (TRUE if f191 else FALSE), long(f192), (NULL if f193 is None else SOME + long(f193)), (NULL if f194 is None else SOME + text(f194)), (NULL if f195 is None else SOME + text(f195)), (NULL if f196 is None else SOME + blob(f196)), (NULL if f197 is None else SOME + text(f197)), (NULL if f198 is None else SOME + text(f198)), (NULL if f199 is None else SOME + long(f199)), (TRUE if f200 else FALSE), (TRUE if f201 else FALSE), (NULL if f202 is None else SOME + write_PreviousAttempt_209(f202)), long(f203), long(f204), long(f205), ))
decision: Callable[[Any], bytes] = write_Decision_184


def write_ExecutionSnapshot_219(o: Any) -> bytes:
    (f220, f221, f222, f223, f224, f225,) = o
    return b''.join((NESTED_226(f220), long(f221), long(f222), text(f223), E_227[f224], long(f225), ))
previous_snapshot: Callable[[Any], bytes] = write_ExecutionSnapshot_219


def write_PreviousAttempt_253(o: Any) -> bytes:
    (f254, f255, f256, f257, f258, f259, f260, f261,) = o
    return b''.join((long(f254), text(f255), text(f256), long(f257), (NULL if f258 is None else SOME + long(f258)), E_262[f259], (NULL if f260 is None else SOME + text(f260)), (TRUE if f261 else FALSE), ))


def write_Decision_228(o: Any) -> bytes:
    f229 = o.request_id
    f230 = o.operation_id
    f231 = o.kind
    f232 = o.state
    f233 = o.outcome
    f234 = o.changed
    f235 = o.retried
    f236 = decision_derived.version(o)
    f237 = o.epoch
    f238 = o.stored_hash
    f239 = o.request_hash
    f240 = o.result
    f241 = o.error
    f242 = decision_derived.holder_worker_id(o)
    f243 = decision_derived.lease_deadline_ms(o)
    f244 = decision_derived.cancel_requested(o)
    f245 = o.duplicate_effect_suspected
    f246 = o.previous
    f247 = o.source_partition
    f248 = o.source_offset
    f249 = o.log_time_ms
    return b''.join((text(f229), text(f230), E_250[f231], (NULL if f232 is None else SOME + NESTED_251(f232)), E_252[f233], (TRUE if f234 else FALSE), (TRUE if f235 else FALSE), long(f236), (NULL if f237 is None else SOME + long(f237)), (NULL if f238 is None else SOME + text(f238)), (NULL if f239 is None else SOME + text(f239)), (NULL if f240 is None else SOME + blob(f240)), (NULL if f241 is None else SOME + text(f241)), (NULL if f242 is None else SOME + text(f242)), (NULL if f243 is None else SOME + long(f243)), (TRUE if f244 else FALSE), (TRUE if f245 else FALSE), (NULL if f246 is None else SOME + write_PreviousAttempt_253(f246)), long(f247), long(f248), long(f249), ))
previous_decision: Callable[[Any], bytes] = write_Decision_228

STATE_BODIES: StateBodies = StateBodies(state)
"""The bodies of recent states: a decision, its snapshot and the state blob share one."""


def previous_state(o: Any) -> bytes:
    """The previous layout's body of a state that fits it."""
    return previous.state_body(STATE_BODIES.body(o))

E_33: Any = {'CLAIMED': b'\x00', 'COMPLETED': b'\x02', 'FAILED': b'\x04', 'EXPIRED': b'\x06', 'AWAITING_APPROVAL': b'\x08', 'APPROVED': b'\n', 'DENIED': b'\x0c'}
E_34: Any = {'pure': b'\x00', 'external': b'\x02'}
E_44: Any = {'CLAIMED': b'\x00', 'COMPLETED': b'\x02', 'FAILED': b'\x04', 'EXPIRED': b'\x06', 'AWAITING_APPROVAL': b'\x08', 'APPROVED': b'\n', 'DENIED': b'\x0c'}
E_53: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&', 'awaiting_approval': b'(', 'approved': b'*', 'denied': b',', 'approval_expired': b'.', 'approval_refused': b'0'}
E_90: Any = {'pure': b'\x00', 'external': b'\x02'}
E_114: Any = {'pure': b'\x00', 'external': b'\x02'}
U_124: Any = {models.Claim: prefixed(b'\x00', write_Claim_82), models.Heartbeat: prefixed(b'\x02', write_Heartbeat_91), models.Complete: prefixed(b'\x04', write_Complete_93), models.Fail: prefixed(b'\x06', write_Fail_95), models.Release: prefixed(b'\x08', write_Release_98), models.Cancel: prefixed(b'\n', write_Cancel_99), models.Sweep: prefixed(b'\x0c', write_Sweep_101), models.Get: prefixed(b'\x0e', write_Get_102), models.Inherit: prefixed(b'\x10', write_Inherit_103), models.Approve: prefixed(b'\x12', write_Approve_115), models.Deny: prefixed(b'\x14', write_Deny_119)}
E_149: Any = {'pure': b'\x00', 'external': b'\x02'}
E_173: Any = {'pure': b'\x00', 'external': b'\x02'}
U_174: Any = {models.Claim: prefixed(b'\x00', write_Claim_141), models.Heartbeat: prefixed(b'\x02', write_Heartbeat_150), models.Complete: prefixed(b'\x04', write_Complete_152), models.Fail: prefixed(b'\x06', write_Fail_154), models.Release: prefixed(b'\x08', write_Release_157), models.Cancel: prefixed(b'\n', write_Cancel_158), models.Sweep: prefixed(b'\x0c', write_Sweep_160), models.Get: prefixed(b'\x0e', write_Get_161), models.Inherit: prefixed(b'\x10', write_Inherit_162)}
NESTED_182: Any = STATE_BODIES.body
E_183: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&', 'awaiting_approval': b'(', 'approved': b'*', 'denied': b',', 'approval_expired': b'.', 'approval_refused': b'0'}
E_206: Any = {'claim': b'\x00', 'heartbeat': b'\x02', 'complete': b'\x04', 'fail': b'\x06', 'release': b'\x08', 'cancel': b'\n', 'sweep': b'\x0c', 'get': b'\x0e', 'inherit': b'\x10', 'approve': b'\x12', 'deny': b'\x14'}
NESTED_207: Any = STATE_BODIES.body
E_208: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&', 'awaiting_approval': b'(', 'approved': b'*', 'denied': b',', 'approval_expired': b'.', 'approval_refused': b'0'}
E_218: Any = {'CLAIMED': b'\x00', 'COMPLETED': b'\x02', 'FAILED': b'\x04', 'EXPIRED': b'\x06', 'AWAITING_APPROVAL': b'\x08', 'APPROVED': b'\n', 'DENIED': b'\x0c'}
NESTED_226: Any = previous_state
E_227: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&'}
E_250: Any = {'claim': b'\x00', 'heartbeat': b'\x02', 'complete': b'\x04', 'fail': b'\x06', 'release': b'\x08', 'cancel': b'\n', 'sweep': b'\x0c', 'get': b'\x0e', 'inherit': b'\x10'}
NESTED_251: Any = previous_state
E_252: Any = {'claimed': b'\x00', 'reclaimed': b'\x02', 'in_progress': b'\x04', 'replayed': b'\x06', 'conflict': b'\x08', 'result_expired': b'\n', 'failed': b'\x0c', 'heartbeat_ok': b'\x0e', 'completed': b'\x10', 'stale_claim': b'\x12', 'released': b'\x14', 'cancel_requested': b'\x16', 'expired': b'\x18', 'invalid_request': b'\x1a', 'state_absent': b'\x1c', 'state_claimed': b'\x1e', 'state_completed': b' ', 'state_failed': b'"', 'state_expired': b'$', 'inherited': b'&'}
E_262: Any = {'CLAIMED': b'\x00', 'COMPLETED': b'\x02', 'FAILED': b'\x04', 'EXPIRED': b'\x06'}
