package pycdrpeers;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

import org.ietf.jgss.GSSException;
import org.ietf.jgss.Oid;
import org.omg.CORBA.Any;
import org.omg.CORBA.INITIALIZE;
import org.omg.CORBA.LocalObject;
import org.omg.CORBA.ORB;
import org.omg.CSI.GSS_NT_Export_Name_OID;
import org.omg.CSI.GSS_NT_Scoped_Username_OID;
import org.omg.CSI.ITTAnonymous;
import org.omg.CSI.ITTPrincipalName;
import org.omg.CSI.ITTX509CertChain;
import org.omg.CSIIOP.AS_ContextSec;
import org.omg.CSIIOP.CompoundSecMech;
import org.omg.CSIIOP.CompoundSecMechList;
import org.omg.CSIIOP.CompoundSecMechListHelper;
import org.omg.CSIIOP.Confidentiality;
import org.omg.CSIIOP.EstablishTrustInClient;
import org.omg.CSIIOP.EstablishTrustInTarget;
import org.omg.CSIIOP.IdentityAssertion;
import org.omg.CSIIOP.Integrity;
import org.omg.CSIIOP.SAS_ContextSec;
import org.omg.CSIIOP.SCS_GSSExportedName;
import org.omg.CSIIOP.ServiceConfiguration;
import org.omg.CSIIOP.TLS_SEC_TRANS;
import org.omg.CSIIOP.TLS_SEC_TRANSHelper;
import org.omg.CSIIOP.TransportAddress;
import org.omg.GSSUP.GSSUPMechOID;
import org.omg.IOP.Codec;
import org.omg.IOP.ENCODING_CDR_ENCAPS;
import org.omg.IOP.Encoding;
import org.omg.IOP.TAG_CSI_SEC_MECH_LIST;
import org.omg.IOP.TAG_NULL_TAG;
import org.omg.IOP.TAG_TLS_SEC_TRANS;
import org.omg.IOP.TaggedComponent;
import org.omg.PortableInterceptor.IORInfo;
import org.omg.PortableInterceptor.IORInterceptor;
import org.omg.PortableInterceptor.ORBInitInfo;
import org.omg.PortableInterceptor.ORBInitializer;
import org.omg.PortableServer.POA;
import org.omg.PortableServer.POAHelper;

/**
 * Prints the IOR of an object whose profile carries a CSIv2 TAG_CSI_SEC_MECH_LIST, added the
 * way an application server's security service adds it (WildFly on the OpenJDK ORB, GlassFish):
 * an IORInterceptor that builds the CSIIOP structures and has the ORB's own helpers and
 * CDR-encapsulation Codec encode them. The OIDs are the OMG constants, DER-encoded by the JDK's
 * org.ietf.jgss.Oid. Runs on any ORB whose jars hold org.omg.CSIIOP (JacORB, the OpenJDK ORB).
 *
 * Arguments: TLS_HOST TLS_PORT REALM name=value... (ORB properties, the ORB's class among them).
 * The mechanism list holds two mechanisms: TLS at TLS_HOST:TLS_PORT requiring integrity,
 * confidentiality and a client certificate, GSSUP username/password in REALM required, identity
 * assertion supported; and one with no transport security (TAG_NULL_TAG), GSSUP supported.
 */
public final class CsiIorPublisher {
    private static String tlsHost;
    private static short tlsPort;
    private static String realm;
    private static ORB orb;

    private CsiIorPublisher() {}

    public static void main(String[] args) throws Exception {
        tlsHost = args[0];
        tlsPort = (short) Integer.parseInt(args[1]);
        realm = args[2];
        String[] props = java.util.Arrays.copyOfRange(args, 3, args.length);
        java.util.Properties properties = PeerSupport.orbProperties(props);
        properties.setProperty(
                "org.omg.PortableInterceptor.ORBInitializerClass." + Initializer.class.getName(), "");
        orb = ORB.init(new String[0], properties);
        POA root = POAHelper.narrow(orb.resolve_initial_references("RootPOA"));
        org.omg.CORBA.Object ref = root.create_reference("IDL:pycdr/Secure:1.0");
        System.out.println(orb.object_to_string(ref));
        System.out.flush();
        orb.destroy();
    }

    /** Registered through the ORBInitializerClass property. */
    public static final class Initializer extends LocalObject implements ORBInitializer {
        @Override
        public void pre_init(ORBInitInfo info) {}

        @Override
        public void post_init(ORBInitInfo info) {
            try {
                Codec codec = info.codec_factory().create_codec(
                        new Encoding(ENCODING_CDR_ENCAPS.value, (byte) 1, (byte) 2));
                info.add_ior_interceptor(new Publisher(codec));
            } catch (Exception e) {
                throw new INITIALIZE("cannot add the CSIv2 IOR interceptor: " + e);
            }
        }
    }

    private static final class Publisher extends LocalObject implements IORInterceptor {
        private final Codec codec;

        Publisher(Codec codec) {
            this.codec = codec;
        }

        @Override
        public String name() {
            return "pycdr-csiv2-publisher";
        }

        @Override
        public void destroy() {}

        @Override
        public void establish_components(IORInfo info) {
            try {
                info.add_ior_component(new TaggedComponent(TAG_CSI_SEC_MECH_LIST.value, mechanisms()));
            } catch (Exception e) {
                throw new INITIALIZE("cannot build the CSIv2 component: " + e);
            }
        }

        private byte[] mechanisms() throws Exception {
            short integrityAndConfidentiality = (short) (Integrity.value | Confidentiality.value);
            short tlsSupports = (short) (integrityAndConfidentiality | EstablishTrustInTarget.value
                    | EstablishTrustInClient.value);
            short tlsRequires = (short) (integrityAndConfidentiality | EstablishTrustInClient.value);
            Any tlsAny = orb.create_any();
            TLS_SEC_TRANSHelper.insert(tlsAny, new TLS_SEC_TRANS(tlsSupports, tlsRequires,
                    new TransportAddress[] {new TransportAddress(tlsHost, tlsPort)}));
            TaggedComponent tls = new TaggedComponent(TAG_TLS_SEC_TRANS.value, codec.encode_value(tlsAny));

            byte[] gssup = der(GSSUPMechOID.value);
            byte[] realmName = exportedName(gssup, realm);
            AS_ContextSec usernamePassword = new AS_ContextSec(EstablishTrustInClient.value,
                    EstablishTrustInClient.value, gssup, realmName);
            SAS_ContextSec assertion = new SAS_ContextSec(IdentityAssertion.value, (short) 0,
                    new ServiceConfiguration[] {
                        new ServiceConfiguration(SCS_GSSExportedName.value, realmName)},
                    new byte[][] {der(GSS_NT_Export_Name_OID.value), der(GSS_NT_Scoped_Username_OID.value)},
                    ITTAnonymous.value | ITTPrincipalName.value | ITTX509CertChain.value);
            CompoundSecMech overTls = new CompoundSecMech(
                    (short) (tlsRequires | EstablishTrustInClient.value), tls, usernamePassword, assertion);

            AS_ContextSec optional = new AS_ContextSec(EstablishTrustInClient.value, (short) 0,
                    gssup, realmName);
            SAS_ContextSec none = new SAS_ContextSec((short) 0, (short) 0,
                    new ServiceConfiguration[0], new byte[0][], 0);
            CompoundSecMech plain = new CompoundSecMech((short) 0,
                    new TaggedComponent(TAG_NULL_TAG.value, new byte[0]), optional, none);

            Any list = orb.create_any();
            CompoundSecMechListHelper.insert(list,
                    new CompoundSecMechList(false, new CompoundSecMech[] {overTls, plain}));
            return codec.encode_value(list);
        }
    }

    /** The DER encoding of an OMG OID constant ("oid:1.2.3"). */
    private static byte[] der(String omgOid) throws GSSException {
        return new Oid(omgOid.substring(omgOid.indexOf(':') + 1)).getDER();
    }

    /** A GSS exported name (RFC 2743 3.2) of ``name`` in the mechanism ``mechDer``. */
    private static byte[] exportedName(byte[] mechDer, String name) {
        byte[] text = name.getBytes(StandardCharsets.UTF_8);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write(0x04);
        out.write(0x01);
        out.write(mechDer.length >> 8);
        out.write(mechDer.length);
        out.write(mechDer, 0, mechDer.length);
        for (int shift = 24; shift >= 0; shift -= 8) {
            out.write(text.length >> shift);
        }
        out.write(text, 0, text.length);
        return out.toByteArray();
    }
}
