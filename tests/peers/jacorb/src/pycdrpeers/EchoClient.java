package pycdrpeers;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.omg.CORBA.Any;
import org.omg.CORBA.NVList;
import org.omg.CORBA.ORB;
import org.omg.CORBA.Request;
import org.omg.CORBA.SystemException;
import org.omg.CORBA.TypeCode;
import org.omg.CORBA.UnknownUserException;

/**
 * Client for tests, on JacORB, the OpenJDK ORB or the GlassFish ORB: calls operations of any IDL
 * interface through the DII, from the description pycdr wrote for it (InterfaceDescription), so no
 * IDL compiler is needed.
 * Usage: EchoClient DESCRIPTION_FILE IOR_OR_CORBALOC CALLS_FILE [name=value ORB property ...]
 * CALLS_FILE has one call a line: "<operation> <hex of a CDR encapsulation of the in/inout values>".
 * For each call it prints one JSON object on a line:
 *   {"op": "echo_long", "reply": "<hex of an encapsulation: result unless void, then out/inout values>"}
 *   {"op": "note", "reply": ""}                          (oneway: sent, nothing comes back)
 *   {"op": "echo_raise", "user_exception": "IDL:EchoAll/Oops:1.0", "body": "<hex encapsulation of the exception>"}
 *   {"op": "echo_x", "exception": "IDL:omg.org/CORBA/BAD_OPERATION:1.0", "minor": 0, "completed": 1}
 */
public final class EchoClient {
    public static void main(String[] args) throws Exception {
        if (args.length < 3) {
            System.err.println("usage: EchoClient DESCRIPTION_FILE IOR CALLS_FILE [name=value ...]");
            System.exit(2);
        }
        ORB orb = ORB.init(new String[0], PeerSupport.orbProperties(Arrays.copyOfRange(args, 3, args.length)));
        ValueStreams streams = ValueStreams.forOrb(orb);
        InterfaceDescription description = InterfaceDescription.read(streams, args[0]);
        org.omg.CORBA.Object target = orb.string_to_object(args[1]);
        for (String line : Files.readAllLines(Paths.get(args[2]), StandardCharsets.US_ASCII)) {
            if (line.isEmpty()) {
                continue;
            }
            String[] fields = line.split(" ", -1);
            if (fields.length != 2) {
                throw new IllegalArgumentException("expected '<operation> <hex>', got " + line);
            }
            InterfaceDescription.Operation operation = description.operations.get(fields[0]);
            if (operation == null) {
                throw new IllegalArgumentException("the description has no operation " + fields[0]);
            }
            System.out.println(invoke(orb, streams, target, operation, fields[1]));
            System.out.flush();
        }
        orb.shutdown(true);
    }

    private static String invoke(ORB orb, ValueStreams streams, org.omg.CORBA.Object target, InterfaceDescription.Operation operation,
                                 String argumentsHex) {
        Request request = request(streams, target, operation, argumentsHex);
        try {
            if (operation.call.equals("oneway")) {
                request.send_oneway();
                return onewaySent(operation);
            }
            request.invoke();
        } catch (SystemException e) {
            return start(operation) + systemExceptionJson(e);
        }
        return outcome(streams, operation, request);
    }

    /** A DII request for OPERATION on TARGET with the in/inout values in ARGUMENTS_HEX. */
    static Request request(ValueStreams streams, org.omg.CORBA.Object target, InterfaceDescription.Operation operation,
                           String argumentsHex) {
        Any[] argumentValues = InterfaceDescription.readValues(streams, operation.argumentTypes(), argumentsHex);
        Request request = target._request(operation.name);
        int next = 0;
        for (InterfaceDescription.Parameter parameter : operation.parameters) {
            Any value;
            if (parameter.mode == org.omg.CORBA.ARG_IN.value) {
                value = request.add_in_arg();
            } else if (parameter.mode == org.omg.CORBA.ARG_INOUT.value) {
                value = request.add_inout_arg();
            } else {
                request.add_out_arg().type(parameter.type);
                continue;
            }
            Any given = argumentValues[next++];
            value.read_value(given.create_input_stream(), given.type());
        }
        request.set_return_type(operation.result);
        for (TypeCode exception : operation.exceptions) {
            request.exceptions().add(exception);
        }
        return request;
    }

    /** The JSON line for a oneway call sent: nothing comes back. */
    static String onewaySent(InterfaceDescription.Operation operation) {
        return start(operation) + "\"reply\": \"\"}";
    }

    static String start(InterfaceDescription.Operation operation) {
        return "{\"op\": \"" + operation.name + "\", ";
    }

    /** The JSON line for a request that has come back (invoke or get_response). */
    static String outcome(ValueStreams streams, InterfaceDescription.Operation operation, Request request) {
        String start = start(operation);
        Exception raised = request.env().exception();
        if (raised instanceof SystemException) {
            return start + systemExceptionJson((SystemException) raised);
        }
        if (raised instanceof UnknownUserException) {
            Any exception = ((UnknownUserException) raised).except;
            String repositoryId;
            try {
                repositoryId = exception.type().id();
            } catch (org.omg.CORBA.TypeCodePackage.BadKind e) {
                throw new IllegalStateException("a user exception's TypeCode has no id", e);
            }
            return start + "\"user_exception\": \"" + repositoryId + "\", \"body\": \""
                    + InterfaceDescription.writeValues(streams, InterfaceDescription.list(exception)) + "\"}";
        }
        if (raised != null) {
            throw new IllegalStateException("unexpected exception from the DII", raised);
        }
        List<Any> reply = new ArrayList<>();
        if (operation.hasResult()) {
            reply.add(request.return_value());
        }
        NVList arguments = request.arguments();
        for (int i = 0; i < operation.parameters.size(); i++) {
            if (operation.parameters.get(i).sentBack()) {
                try {
                    reply.add(arguments.item(i).value());
                } catch (org.omg.CORBA.Bounds e) {
                    throw new IllegalStateException("the DII request lost an argument", e);
                }
            }
        }
        return start + "\"reply\": \"" + InterfaceDescription.writeValues(streams, reply) + "\"}";
    }

    static String systemExceptionJson(SystemException e) {
        String repositoryId = "IDL:omg.org/CORBA/" + e.getClass().getSimpleName() + ":1.0";
        return "\"exception\": \"" + repositoryId + "\", \"minor\": " + Integer.toUnsignedString(e.minor)
                + ", \"completed\": " + e.completed.value() + "}";
    }
}
