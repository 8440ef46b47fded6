package pycdrpeers;

import java.util.List;

import org.jacorb.orb.CDRInputStream;
import org.jacorb.orb.CDROutputStream;
import org.jacorb.orb.CodeSet;
import org.omg.CORBA.Any;
import org.omg.CORBA.ORB;
import org.omg.CORBA.TypeCode;

/** ValueStreams on JacORB's own CDR streams. */
final class JacorbValueStreams implements ValueStreams {
    /** The GIOP minor version of the CDR of exchanged values (VALUE_VERSION in Python). */
    static final int VALUE_GIOP_MINOR = 2;
    /** Their code sets: pycdr's defaults, ISO-8859-1 for char data and UTF-16 for wchar data. A
     *  JacORB stream without them reads and writes char data as UTF-8. */
    static final CodeSet VALUE_CHAR_CODE_SET = CodeSet.getCodeSet(0x00010001);
    static final CodeSet VALUE_WCHAR_CODE_SET = CodeSet.getCodeSet(0x00010109);

    private final ORB orb;

    JacorbValueStreams(ORB orb) {
        this.orb = orb;
    }

    @Override
    public TypeCode readTypeCode(byte[] encapsulation) {
        CDRInputStream in = encapsulationStream(encapsulation);
        TypeCode type = in.read_TypeCode();
        requireEnd(in, "TypeCode");
        return type;
    }

    /** A JacORB input stream on an encapsulation, past its byte-order octet. */
    private CDRInputStream encapsulationStream(byte[] bytes) {
        CDRInputStream in = new CDRInputStream(orb, bytes);
        in.setGIOPMinor(VALUE_GIOP_MINOR);
        in.setCodeSet(VALUE_CHAR_CODE_SET, VALUE_WCHAR_CODE_SET);
        in.openEncapsulatedArray();   // reads the byte-order octet; alignment counts from it
        return in;
    }

    private static void requireEnd(CDRInputStream in, String what) {
        int left = in.available();
        if (left != 0) {
            throw new IllegalArgumentException(left + " bytes left after the " + what);
        }
    }

    @Override
    public Any[] readValues(List<TypeCode> types, byte[] encapsulation) {
        CDRInputStream in = encapsulationStream(encapsulation);
        Any[] values = new Any[types.size()];
        for (int i = 0; i < values.length; i++) {
            values[i] = orb.create_any();
            values[i].read_value(in, types.get(i));
        }
        requireEnd(in, "values");
        return values;
    }

    @Override
    public byte[] writeValues(List<Any> values) {
        CDROutputStream out = new CDROutputStream(orb);
        out.setGIOPMinor(VALUE_GIOP_MINOR);
        out.setCodeSets(VALUE_CHAR_CODE_SET, VALUE_WCHAR_CODE_SET);
        out.beginEncapsulatedArray();   // writes the byte-order octet (big-endian)
        for (Any value : values) {
            value.write_value(out);
        }
        return out.getBufferCopy();
    }

    @Override
    public byte[] objectKey(org.omg.CORBA.Object reference) {
        // Read from the parsed IOR: Delegate.getObjectKey() would bind, i.e. connect to ourselves.
        return ((org.jacorb.orb.Delegate) ((org.omg.CORBA.portable.ObjectImpl) reference)._get_delegate())
                .getParsedIOR().get_object_key();
    }
}
