package pycdrpeers;

import java.util.List;

import org.omg.CORBA.Any;
import org.omg.CORBA.ORB;
import org.omg.CORBA.TypeCode;

/**
 * How a peer program reads and writes the CDR encapsulations that cross between pycdr and it
 * (TypeCodes, values), and finds the object key of a reference it made. JacORB does it with its
 * own CDR streams (JacorbValueStreams); the JDK-lineage ORBs (OpenJDK, GlassFish), which share no
 * stream classes with it, through the standard IOP Codec (CodecValueStreams). Only the matching
 * class is loaded, so a program runs on one ORB's jars alone.
 */
interface ValueStreams {
    /** A TypeCode from its CDR encapsulation. */
    TypeCode readTypeCode(byte[] encapsulation);

    /** Anys of the given types, read in order from one encapsulation. */
    Any[] readValues(List<TypeCode> types, byte[] encapsulation);

    /** One encapsulation holding the values of the Anys, in order. */
    byte[] writeValues(List<Any> values);

    /** The object key of the first IIOP profile of a reference this ORB made, without binding it. */
    byte[] objectKey(org.omg.CORBA.Object reference);

    static ValueStreams forOrb(ORB orb) {
        // -Dpycdrpeers.valueStreams=codec: the IOP Codec on JacORB too (a JacORB older than
        // the stream classes JacorbValueStreams uses, 3.4).
        boolean codec = "codec".equals(System.getProperty("pycdrpeers.valueStreams"));
        if (!codec && orb.getClass().getName().startsWith("org.jacorb.")) {
            return new JacorbValueStreams(orb);
        }
        return new CodecValueStreams(orb);
    }
}
