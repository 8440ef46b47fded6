"""Minor codes named where their owner publishes them (the OMG's standard codes, omniORB's),
and shown by number alone where not."""

from pycdr.giop.minorcodes import JACORB, MEANINGS, OMG, OMNIORB, SUN, meaning
from pycdr.giop.sysexc import OBJECT_NOT_EXIST, TRANSIENT, CompletionStatus


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


def test_the_table_is_well_formed():
    for (name, vmcid, code), text in MEANINGS.items():
        assert (name is None or name.isupper()) and vmcid in (OMG, OMNIORB, SUN, JACORB)
        assert 0 < code < 0x1000
        # a few words, or the vendor's name for the code and then a few words
        assert text and text[0].isalpha() and not text.endswith(".")
