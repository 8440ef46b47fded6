package pycdrpeers;

import org.jacorb.sasPolicy.SASPolicyValues;
import org.jacorb.sasPolicy.SASPolicyValuesHelper;
import org.jacorb.sasPolicy.SAS_POLICY_TYPE;
import org.omg.CORBA.Any;
import org.omg.CORBA.ORB;
import org.omg.CORBA.Policy;
import org.omg.PortableServer.POA;
import org.omg.PortableServer.POAHelper;

/**
 * Prints the IOR of an object in a POA with JacORB's SAS policy, whose CSIv2 component JacORB
 * itself writes (its SASComponentInterceptor: GSSUP client authentication with the target's
 * supported and required options, the mechanism list's stateful flag from
 * jacorb.security.sas.stateful). JacORB only: run it with the SAS initializer and context class
 * among the name=value ORB properties (tests/test_csiv2_peers.py gives them).
 *
 * Arguments: SUPPORTS REQUIRES (the AS layer's AssociationOptions, decimal) name=value...
 */
public final class JacorbSasIor {
    private JacorbSasIor() {}

    public static void main(String[] args) throws Exception {
        short supports = Short.parseShort(args[0]);
        short requires = Short.parseShort(args[1]);
        ORB orb = ORB.init(new String[0],
                PeerSupport.orbProperties(java.util.Arrays.copyOfRange(args, 2, args.length)));
        POA root = POAHelper.narrow(orb.resolve_initial_references("RootPOA"));
        Any value = orb.create_any();
        SASPolicyValuesHelper.insert(value, new SASPolicyValues(requires, supports, true));
        Policy sas = orb.create_policy(SAS_POLICY_TYPE.value, value);
        POA secure = root.create_POA("SecurePOA", root.the_POAManager(), new Policy[] {sas});
        System.out.println(orb.object_to_string(secure.create_reference("IDL:pycdr/Secure:1.0")));
        System.out.flush();
        orb.destroy();
    }
}
