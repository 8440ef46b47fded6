package pycdrpeers;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import org.omg.CORBA.Any;
import org.omg.CORBA.BAD_OPERATION;
import org.omg.CORBA.CompletionStatus;
import org.omg.CORBA.NO_IMPLEMENT;
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
 * Echo server for tests, on JacORB, the OpenJDK ORB or the GlassFish ORB (whichever
 * org.omg.CORBA.ORBClass names): serves any IDL interface through the DSI, from the description
 * pycdr wrote for it (InterfaceDescription), so no IDL compiler is needed.
 * Usage: EchoServer DESCRIPTION_FILE [name=value ORB property ...] (tests/peers/java_orb.py passes
 * the ORB class and the ORB's host and port settings). Prints "IOR:...", then "KEY <hex object key>", then "READY" on
 * stdout, and runs until standard input closes.
 *
 * Echo semantics, as pycdr's reference echo servant (pycdr.orb.servant.echo_handler) and the
 * omniORBpy echo server: the in/inout values come back, by position, as the result (unless void)
 * and the out/inout values; oneway operations and operations that return nothing return nothing;
 * an operation whose in and reply types differ raises NO_IMPLEMENT. An attribute's _set_ stores
 * the value and its _get_ returns it (NO_IMPLEMENT before the first _set_).
 */
public final class EchoServer {
    static final String POA_NAME = "EchoPOA";
    static final String OBJECT_ID = "Echo";
    /** NO_IMPLEMENT minor code 1 ("missing local value implementation"), OMG VMCID, as pycdr raises. */
    static final int NO_IMPLEMENT_MINOR = 0x4f4d0001;

    static final class EchoServant extends DynamicImplementation {
        private final ORB orb;
        private final InterfaceDescription description;
        private final Map<String, Any> attributes = new HashMap<>();

        EchoServant(ORB orb, InterfaceDescription description) {
            this.orb = orb;
            this.description = description;
        }

        /** The POA answers _is_a from these. */
        @Override
        public String[] _all_interfaces(POA poa, byte[] objectId) {
            return description.isA.toArray(new String[0]);
        }

        @Override
        public void invoke(ServerRequest request) {
            InterfaceDescription.Operation operation = description.operations.get(request.operation());
            if (operation == null) {
                throw new BAD_OPERATION("no operation " + request.operation(), 0, CompletionStatus.COMPLETED_NO);
            }
            NVList arguments = orb.create_list(operation.parameters.size());
            List<Any> received = new ArrayList<>();
            List<Any> sentBack = new ArrayList<>();
            for (InterfaceDescription.Parameter parameter : operation.parameters) {
                Any value = orb.create_any();
                value.type(parameter.type);
                arguments.add_value(parameter.name, value, parameter.mode);
                if (parameter.sentByCaller()) {
                    received.add(value);
                }
                if (parameter.sentBack()) {
                    sentBack.add(value);
                }
            }
            request.arguments(arguments);

            if (operation.call.equals("set")) {
                attributes.put(operation.name.substring("_set_".length()), copy(received.get(0)));
                return;
            }
            if (operation.call.equals("get")) {
                Any stored = attributes.get(operation.name.substring("_get_".length()));
                if (stored == null) {
                    throw new NO_IMPLEMENT(NO_IMPLEMENT_MINOR, CompletionStatus.COMPLETED_NO);
                }
                request.set_result(stored);
                return;
            }
            List<TypeCode> replyTypes = operation.replyTypes();
            if (operation.call.equals("oneway") || replyTypes.isEmpty()) {
                return;
            }
            List<TypeCode> argumentTypes = operation.argumentTypes();
            if (replyTypes.size() != argumentTypes.size()) {
                throw new NO_IMPLEMENT(NO_IMPLEMENT_MINOR, CompletionStatus.COMPLETED_NO);
            }
            for (int i = 0; i < replyTypes.size(); i++) {
                if (!replyTypes.get(i).equivalent(argumentTypes.get(i))) {
                    throw new NO_IMPLEMENT(NO_IMPLEMENT_MINOR, CompletionStatus.COMPLETED_NO);
                }
            }
            // Copies first: an inout value may be both read and overwritten below.
            List<Any> echoed = new ArrayList<>();
            for (Any value : received) {
                echoed.add(copy(value));
            }
            int next = 0;
            if (operation.hasResult()) {
                request.set_result(echoed.get(next++));
            }
            for (Any out : sentBack) {
                Any value = echoed.get(next++);
                out.read_value(value.create_input_stream(), value.type());
            }
        }

        private Any copy(Any value) {
            Any copy = orb.create_any();
            copy.read_value(value.create_input_stream(), value.type());
            return copy;
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: EchoServer DESCRIPTION_FILE [name=value ...]");
            System.exit(2);
        }
        ORB orb = ORB.init(new String[0],
                PeerSupport.orbProperties(java.util.Arrays.copyOfRange(args, 1, args.length)));
        ValueStreams streams = ValueStreams.forOrb(orb);
        InterfaceDescription description = InterfaceDescription.read(streams, args[0]);
        POA rootPoa = POAHelper.narrow(orb.resolve_initial_references("RootPOA"));
        // PERSISTENT + USER_ID gives a fixed object key (JacORB: <implname>/EchoPOA/Echo), usable in corbaloc.
        Policy[] policies = {
            rootPoa.create_lifespan_policy(LifespanPolicyValue.PERSISTENT),
            rootPoa.create_id_assignment_policy(IdAssignmentPolicyValue.USER_ID),
        };
        POA echoPoa = rootPoa.create_POA(POA_NAME, rootPoa.the_POAManager(), policies);
        byte[] objectId = OBJECT_ID.getBytes(java.nio.charset.StandardCharsets.US_ASCII);
        echoPoa.activate_object_with_id(objectId, new EchoServant(orb, description));
        rootPoa.the_POAManager().activate();

        org.omg.CORBA.Object reference = echoPoa.id_to_reference(objectId);
        byte[] objectKey = streams.objectKey(reference);
        System.out.println(orb.object_to_string(reference));
        System.out.println("KEY " + PeerSupport.toHex(objectKey));
        System.out.println("READY");
        System.out.flush();

        PeerSupport.exitWhenStdinCloses();
        orb.run();
    }
}
