import java.util.Properties;
import org.omg.CORBA.*;
import org.omg.PortableServer.*;

// Prints IORs made by the ORB it runs on: one from the root POA (transient, system id),
// one from a persistent child POA with a user id, one from a transient grandchild.
public class KeyVectors {
    static class Svt extends org.omg.PortableServer.DynamicImplementation {
        public String[] _all_interfaces(POA poa, byte[] oid) { return new String[] {"IDL:Echo:1.0"}; }
        public void invoke(ServerRequest r) { throw new BAD_OPERATION(); }
    }
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        // The OpenJDK ORB unless -Dorg.omg.CORBA.ORBClass names another (JacORB, GlassFish):
        // then every -D setting goes to ORB.init.
        if (System.getProperty("org.omg.CORBA.ORBClass") != null) {
            p.putAll(System.getProperties());
        } else {
        p.put("org.omg.CORBA.ORBClass", "com.sun.corba.se.impl.orb.ORBImpl");
        p.put("org.omg.CORBA.ORBSingletonClass", "com.sun.corba.se.impl.orb.ORBSingleton");
        p.put("com.sun.CORBA.ORBServerHost", "127.0.0.1");
        p.put("com.sun.CORBA.POA.ORBPersistentServerPort", "0");
        p.put("com.sun.CORBA.POA.ORBServerId", "7");
        }
        ORB orb = ORB.init(args, p);
        POA root = POAHelper.narrow(orb.resolve_initial_references("RootPOA"));
        root.the_POAManager().activate();
        byte[] oid = root.activate_object(new Svt());
        System.out.println("root " + orb.object_to_string(root.id_to_reference(oid)));
        Policy[] pols = { root.create_lifespan_policy(LifespanPolicyValue.PERSISTENT),
                          root.create_id_assignment_policy(IdAssignmentPolicyValue.USER_ID) };
        POA child = root.create_POA("child", root.the_POAManager(), pols);
        child.activate_object_with_id("myobj".getBytes(), new Svt());
        System.out.println("persistent " + orb.object_to_string(child.id_to_reference("myobj".getBytes())));
        POA grand = child.create_POA("grand", root.the_POAManager(), new Policy[0]);
        byte[] o2 = grand.activate_object(new Svt());
        System.out.println("transient " + orb.object_to_string(grand.id_to_reference(o2)));
        orb.shutdown(false);
        System.exit(0);
    }
}
