package pycdrpeers;

import org.omg.CORBA.Any;
import org.omg.CORBA.ARG_IN;
import org.omg.CORBA.BAD_OPERATION;
import org.omg.CORBA.CompletionStatus;
import org.omg.CORBA.NVList;
import org.omg.CORBA.ORB;
import org.omg.CORBA.Policy;
import org.omg.CORBA.ServerRequest;
import org.omg.CORBA.TypeCode;
import org.omg.PortableServer.DynamicImplementation;
import org.omg.PortableServer.IdAssignmentPolicyValue;
import org.omg.PortableServer.LifespanPolicyValue;
import org.omg.PortableServer.POA;
import org.omg.PortableServer.POAHelper;

/**
 * JacORB echo server for tests: serves IDL:PycdrTest/Echo:1.0 through the DSI, so no IDL compiler
 * is needed. Arguments are JacORB properties as name=value (the test passes OAIAddr, OAPort,
 * jacorb.implname, ...). Prints "IOR:...", then "KEY <hex object key>", then "READY" on stdout,
 * and runs until standard input closes.
 */
public final class EchoServer {
    static final String POA_NAME = "EchoPOA";
    static final String OBJECT_ID = "Echo";

    /** Echoes the single in argument back as the result; the POA answers _is_a and _non_existent. */
    static final class EchoServant extends DynamicImplementation {
        private final ORB orb;

        EchoServant(ORB orb) {
            this.orb = orb;
        }

        @Override
        public String[] _all_interfaces(POA poa, byte[] objectId) {
            return new String[] {EchoTypes.ECHO_REPOSITORY_ID};
        }

        @Override
        public void invoke(ServerRequest request) {
            String operation = request.operation();
            TypeCode type = EchoTypes.typeOf(orb, operation);
            if (type == null) {
                throw new BAD_OPERATION("no operation " + operation, 0, CompletionStatus.COMPLETED_NO);
            }
            NVList arguments = orb.create_list(1);
            Any value = orb.create_any();
            value.type(type);
            arguments.add_value("value", value, ARG_IN.value);
            request.arguments(arguments);
            request.set_result(value);
        }
    }

    public static void main(String[] args) throws Exception {
        ORB orb = ORB.init(new String[0], EchoTypes.orbProperties(args));
        POA rootPoa = POAHelper.narrow(orb.resolve_initial_references("RootPOA"));
        // PERSISTENT + USER_ID gives a fixed object key, <implname>/EchoPOA/Echo, usable in corbaloc.
        Policy[] policies = {
            rootPoa.create_lifespan_policy(LifespanPolicyValue.PERSISTENT),
            rootPoa.create_id_assignment_policy(IdAssignmentPolicyValue.USER_ID),
        };
        POA echoPoa = rootPoa.create_POA(POA_NAME, rootPoa.the_POAManager(), policies);
        byte[] objectId = OBJECT_ID.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        echoPoa.activate_object_with_id(objectId, new EchoServant(orb));
        rootPoa.the_POAManager().activate();

        org.omg.CORBA.Object reference = echoPoa.id_to_reference(objectId);
        // Read from the parsed IOR: Delegate.getObjectKey() would bind, i.e. connect to ourselves.
        byte[] objectKey = ((org.jacorb.orb.Delegate) ((org.omg.CORBA.portable.ObjectImpl) reference)._get_delegate())
                .getParsedIOR().get_object_key();
        System.out.println(orb.object_to_string(reference));
        System.out.println("KEY " + EchoTypes.toHex(objectKey));
        System.out.println("READY");
        System.out.flush();

        EchoTypes.exitWhenStdinCloses();
        orb.run();
    }
}
