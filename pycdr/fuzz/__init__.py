"""`pycdr fuzz`: a protocol-aware GIOP fuzzer.

    seeds.py     the messages mutation starts from (conformance catalog, IDL
                 requests with random valid arguments, GIOP messages from pcaps)
    mutators.py  structure-aware mutators, byte flips and splices, aimed at the
                 fields pycdr.giop.layout finds; each records the field path
                 it touched
    engine.py    the campaign: cases derived from --seed and their index,
                 sending (pipelined on a reused connection when the case keeps
                 the framing), detection (close without MessageError, hang,
                 flood, liveness, a spawned target's exit and memory),
                 attribution of a breakage to a case
    case.py      a case, its verdict, what tells one fault from another
    health.py    probes of the target, learned waits, a spawned target's spin
    findings.py  de-duplication, delta-debugging minimization, finding folders
                 and replay
"""
