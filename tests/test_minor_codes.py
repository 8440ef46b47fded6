"""Minor codes named where their owner publishes them (the OMG's standard codes, omniORB's,
the JDK ORBs', JacORB's, TAO's, Orbix's, IBM's), by vendor and number where a known VMCID's
code is not in its table, and by number alone where the VMCID is not known."""

import json

from click.testing import CliRunner

from pycdr.cli.main import main
from pycdr.cli.pcap import system_exception_text
from pycdr.giop.minorcodes import (IBM, JACORB, MEANINGS, OMG, OMNIORB, ORBIX, SUN, TAO,
                                   TAO_ERRNOS, TAO_LOCATIONS, VENDORS, VISIBROKER, meaning,
                                   minor_code_name)
from pycdr.giop.messages import Reply, ReplyStatus, encode_message
from pycdr.giop.sysexc import COMM_FAILURE, OBJECT_NOT_EXIST, TRANSIENT, CompletionStatus


def test_known_codes_are_named_in_text_and_json():
    e = TRANSIENT(OMNIORB | 2, CompletionStatus.COMPLETED_NO)
    assert str(e) == "CORBA::TRANSIENT minor omniORB:2 (0x41540002: connect failed), COMPLETED_NO"
    assert e.to_json()["minor_meaning"] == "connect failed"
    e = OBJECT_NOT_EXIST(OMG | 1)
    assert "no object of that key" in str(e)


def test_a_vendor_wide_code_is_named_for_every_exception():
    assert meaning("NO_PERMISSION", JACORB | 3) == meaning("MARSHAL", JACORB | 3)
    assert "server side" in meaning("NO_PERMISSION", JACORB | 3)


def test_a_code_of_another_exception_or_vendor_is_not_named():
    # (omniORB 2 is TRANSIENT's "connect failed", not OBJECT_NOT_EXIST's)
    assert meaning("OBJECT_NOT_EXIST", OMNIORB | 2) is None
    assert meaning("TRANSIENT", 0x12345000 | 2) is None
    e = TRANSIENT(0x12345002)
    assert str(e).endswith("(0x12345002), COMPLETED_NO") and e.to_json()["minor_meaning"] is None
    assert minor_code_name("TRANSIENT", 0x12345002) is None


def test_each_vendors_vmcid_is_recognised():
    for vmcid, vendor in ((TAO, "TAO"), (ORBIX, "Orbix"), (VISIBROKER, "VisiBroker"),
                          (IBM, "IBM"), (0x4942F000, "IBM"), (0x49424000, "IBM"),
                          (OMG, "OMG"), (OMNIORB, "omniORB"), (SUN, "Sun"), (JACORB, "JacORB")):
        assert VENDORS[vmcid] == vendor
        assert COMM_FAILURE(vmcid | 1).vendor == vendor
        assert minor_code_name("COMM_FAILURE", vmcid | 1).startswith(vendor + " ")


def test_a_tao_code_is_its_location_and_errno():
    # TAO's send-request location (2 << 7) with its ECONNRESET (0x13)
    assert minor_code_name("COMM_FAILURE", 0x54410113) == \
        "TAO 0x113: sending the request failed, ECONNRESET"
    assert meaning("TIMEOUT", TAO | 0x09 << 7 | 0x01) == "connect timed out, ETIMEDOUT"
    assert meaning("TRANSIENT", TAO | 0x03 << 7) == "POA discarding requests, errno unspecified"
    # a location and an errno TAO does not define are still told apart
    assert meaning("INTERNAL", TAO | 0x1F << 7 | 0x70) == "location 31, errno low bits 112"
    assert len(TAO_LOCATIONS) == 21 and len(TAO_ERRNOS) == 20


def test_orbix_ibm_codes_are_named_by_their_tables():
    assert minor_code_name("COMM_FAILURE", ORBIX | 0x205) == \
        "Orbix 0x205: GIOP subsystem, its code 5"
    assert meaning("OBJ_ADAPTER", ORBIX | 0x50A) == "POA subsystem, its code 10"
    assert minor_code_name("NO_MEMORY", IBM | 0x33) == "IBM 51: SOMDERROR_NoMemory"
    assert meaning("NO_PERMISSION", 0x49424301) == "security (0x49424300-0x494243ff)"
    assert meaning("TRANSIENT", 0x49421085).startswith("naming service")


def test_an_unknown_code_of_a_known_vmcid_says_whose_it_is():
    assert minor_code_name("TRANSIENT", VISIBROKER | 5) == "VisiBroker minor 5"
    assert minor_code_name("COMM_FAILURE", 0x4942F209) == "IBM minor 521"
    assert minor_code_name("MARSHAL", OMNIORB | 4000) == "omniORB minor 4000"
    assert minor_code_name("COMM_FAILURE", ORBIX | 0x705) == "Orbix minor 0x705"
    assert meaning("TRANSIENT", VISIBROKER | 5) is None


def _reply(minor: int) -> bytes:
    return encode_message(Reply(request_id=7, reply_status=ReplyStatus.SYSTEM_EXCEPTION,
                                system_exception=COMM_FAILURE(minor, 2)))


def test_decode_json_and_pcap_text_name_a_tao_and_a_visibroker_code():
    runner = CliRunner()
    for minor, vendor, said, named in (
            (0x54410113, "TAO", "sending the request failed, ECONNRESET",
             "TAO 0x113: sending the request failed, ECONNRESET"),
            (VISIBROKER | 5, "VisiBroker", None, "VisiBroker minor 5")):
        out = runner.invoke(main, ["decode", "--json", _reply(minor).hex()])
        assert out.exit_code == 0, out.output
        exc = json.loads(out.output)["system_exception"]
        assert (exc["minor"], exc["vendor"], exc["minor_meaning"]) == (minor, vendor, said)
        # the line pcap prints for the reply, from that same object
        assert system_exception_text(exc) == \
            f"COMM_FAILURE minor 0x{minor:08x} ({named}) COMPLETED_MAYBE"


def test_the_table_is_well_formed():
    for (name, vmcid, code), text in MEANINGS.items():
        assert (name is None or name.isupper()) and vmcid in VENDORS
        assert 0 < code < 0x1000
        # a few words, or the vendor's name for the code and then a few words
        assert text and text[0].isalpha() and not text.endswith(".")
    for table in (TAO_LOCATIONS, TAO_ERRNOS):
        assert all(text and not text.endswith(".") for text in table.values())
