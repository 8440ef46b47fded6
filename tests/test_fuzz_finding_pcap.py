"""A finding's capture.pcap: readable by pycdr's pcap decoder, written without scapy
(a finding is saved in the middle of a campaign, where importing scapy stalled it)."""

import subprocess
import sys

from pycdr.fuzz.findings import write_pcap
from pycdr.giop.messages import KeyAddr, LocateRequest, encode_message
from pycdr.capture.giop import decode_capture


def _locate(request_id):
    return encode_message(LocateRequest(version=(1, 2), little=True, request_id=request_id,
                                        target=KeyAddr(b"Echo")))


def test_the_capture_holds_the_cases_messages_and_the_answer(tmp_path):
    path = str(tmp_path / "capture.pcap")
    message_error = b"GIOP\x01\x02\x00\x06\x00\x00\x00\x00"
    write_pcap(path, [_locate(7), _locate(8)], message_error, port=2809)
    decoded = [(e["src"], e["dst"], e["type"], e.get("request_id"))
               for e in decode_capture(path)]
    assert decoded == [("10.0.0.1:40000", "10.0.0.2:2809", "LocateRequest", 7),
                       ("10.0.0.1:40000", "10.0.0.2:2809", "LocateRequest", 8),
                       ("10.0.0.2:2809", "10.0.0.1:40000", "MessageError", None)]


def test_saving_a_capture_does_not_import_scapy(tmp_path):
    code = ("import sys; from pycdr.fuzz.findings import write_pcap; "
            f"write_pcap({str(tmp_path / 'c.pcap')!r}, [b'GIOP\\x01\\x02\\x01\\x05' + bytes(4)]); "
            "print('scapy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "False"
