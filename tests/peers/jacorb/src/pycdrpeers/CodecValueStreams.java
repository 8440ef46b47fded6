package pycdrpeers;

import java.util.List;

import org.omg.CORBA.Any;
import org.omg.CORBA.ORB;
import org.omg.CORBA.StructMember;
import org.omg.CORBA.TCKind;
import org.omg.CORBA.TypeCode;
import org.omg.IOP.Codec;
import org.omg.IOP.CodecFactoryHelper;
import org.omg.IOP.ENCODING_CDR_ENCAPS;
import org.omg.IOP.Encoding;
import org.omg.IOP.IOR;
import org.omg.IOP.IORHelper;
import org.omg.IOP.TAG_INTERNET_IOP;
import org.omg.IOP.TaggedProfile;

/**
 * ValueStreams through the standard IOP Codec (CDR encapsulation, GIOP 1.2), for ORBs whose
 * stream classes the programs do not know. A Codec encodes one value, so a list of values
 * travels as the members of a struct made for it: a struct's CDR is its members' CDR in order,
 * the same bytes as the values one after another. A single value goes through the Codec as
 * itself: the JDK-lineage ORBs cannot read a `fixed` back from the stream of a struct Any
 * (MARSHAL, end of buffer), and most operations take one value.
 */
final class CodecValueStreams implements ValueStreams {
    private final ORB orb;
    private final Codec codec;

    CodecValueStreams(ORB orb) {
        this.orb = orb;
        try {
            codec = CodecFactoryHelper.narrow(orb.resolve_initial_references("CodecFactory"))
                    .create_codec(new Encoding(ENCODING_CDR_ENCAPS.value, (byte) 1, (byte) 2));
        } catch (org.omg.CORBA.UserException e) {
            throw new IllegalStateException("the ORB has no GIOP 1.2 CDR encapsulation codec", e);
        }
    }

    private TypeCode structOf(List<TypeCode> types) {
        StructMember[] members = new StructMember[types.size()];
        for (int i = 0; i < members.length; i++) {
            members[i] = new StructMember("v" + i, types.get(i), null);
        }
        return orb.create_struct_tc("IDL:pycdr/Values:1.0", "Values", members);
    }

    private Any decode(byte[] encapsulation, TypeCode type) {
        try {
            return codec.decode_value(encapsulation, type);
        } catch (org.omg.CORBA.UserException e) {
            throw new IllegalArgumentException("the codec cannot read " + type, e);
        }
    }

    @Override
    public TypeCode readTypeCode(byte[] encapsulation) {
        return decode(encapsulation, orb.get_primitive_tc(TCKind.tk_TypeCode)).extract_TypeCode();
    }

    @Override
    public Any[] readValues(List<TypeCode> types, byte[] encapsulation) {
        Any[] values = new Any[types.size()];
        if (values.length == 0) {
            return values;
        }
        if (values.length == 1) {
            values[0] = decode(encapsulation, types.get(0));
            return values;
        }
        org.omg.CORBA.portable.InputStream in = decode(encapsulation, structOf(types)).create_input_stream();
        for (int i = 0; i < values.length; i++) {
            values[i] = orb.create_any();
            values[i].read_value(in, types.get(i));
        }
        return values;
    }

    @Override
    public byte[] writeValues(List<Any> values) {
        if (values.size() == 1) {
            return encode(values.get(0));
        }
        org.omg.CORBA.portable.OutputStream out = orb.create_output_stream();
        java.util.List<TypeCode> types = new java.util.ArrayList<>();
        for (Any value : values) {
            value.write_value(out);
            types.add(value.type());
        }
        Any all = orb.create_any();
        all.read_value(out.create_input_stream(), structOf(types));
        return encode(all);
    }

    private byte[] encode(Any value) {
        try {
            return codec.encode_value(value);
        } catch (org.omg.CORBA.UserException e) {
            throw new IllegalArgumentException("the codec cannot write " + value.type(), e);
        }
    }

    /** The IIOP profile body up to its object key: version, host, port, key (later fields unread). */
    private TypeCode profileBodyPrefix() {
        TypeCode octet = orb.get_primitive_tc(TCKind.tk_octet);
        return structOf(List.of(octet, octet, orb.get_primitive_tc(TCKind.tk_string),
                orb.get_primitive_tc(TCKind.tk_ushort), orb.create_sequence_tc(0, octet)));
    }

    @Override
    public byte[] objectKey(org.omg.CORBA.Object reference) {
        org.omg.CORBA.portable.OutputStream out = orb.create_output_stream();
        out.write_Object(reference);
        IOR ior = IORHelper.read(out.create_input_stream());
        for (TaggedProfile profile : ior.profiles) {
            if (profile.tag == TAG_INTERNET_IOP.value) {
                org.omg.CORBA.portable.InputStream body =
                        decode(profile.profile_data, profileBodyPrefix()).create_input_stream();
                body.read_octet();
                body.read_octet();
                body.read_string();
                body.read_ushort();
                byte[] key = new byte[body.read_ulong()];
                body.read_octet_array(key, 0, key.length);
                return key;
            }
        }
        throw new IllegalStateException("the reference has no IIOP profile");
    }
}
