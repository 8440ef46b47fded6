package pycdrpeers;

import org.omg.CORBA.Any;
import org.omg.CORBA.ORB;
import org.omg.CORBA.Request;
import org.omg.CORBA.SystemException;
import org.omg.CORBA.TypeCode;

/**
 * JacORB echo client for tests, using the DII so no IDL compiler is needed.
 * Usage: EchoClient IOR [name=value JacORB property ...] -- operation=text ...
 * For each call it prints one JSON object on a line:
 *   {"op": "echo_long", "result": "42"}            (text form as in EchoTypes)
 *   {"op": "echo_x", "exception": "IDL:omg.org/CORBA/BAD_OPERATION:1.0", "minor": 0, "completed": 1}
 */
public final class EchoClient {
    public static void main(String[] args) {
        int separator = java.util.Arrays.asList(args).indexOf("--");
        if (args.length < 2 || separator < 1) {
            System.err.println("usage: EchoClient IOR [name=value ...] -- operation=text ...");
            System.exit(2);
        }
        String ior = args[0];
        String[] orbArgs = java.util.Arrays.copyOfRange(args, 1, separator);
        String[] calls = java.util.Arrays.copyOfRange(args, separator + 1, args.length);

        ORB orb = ORB.init(new String[0], EchoTypes.orbProperties(orbArgs));
        org.omg.CORBA.Object target = orb.string_to_object(ior);
        for (String call : calls) {
            int eq = call.indexOf('=');
            String operation = eq < 0 ? call : call.substring(0, eq);
            String text = eq < 0 ? "" : call.substring(eq + 1);
            System.out.println(invoke(orb, target, operation, text));
            System.out.flush();
        }
        orb.shutdown(true);
    }

    private static String invoke(ORB orb, org.omg.CORBA.Object target, String operation, String text) {
        TypeCode type = EchoTypes.typeOf(orb, operation);
        if (type == null) {
            throw new IllegalArgumentException("unknown echo operation " + operation);
        }
        Request request = target._request(operation);
        EchoTypes.insert(orb, operation, request.add_in_arg(), text);
        request.set_return_type(type);
        try {
            request.invoke();
        } catch (SystemException e) {
            return exceptionJson(operation, e);
        }
        Exception raised = request.env().exception();
        if (raised instanceof SystemException) {
            return exceptionJson(operation, (SystemException) raised);
        }
        if (raised != null) {
            return "{\"op\": \"" + operation + "\", \"exception\": \"" + raised.getClass().getName() + "\"}";
        }
        Any result = request.return_value();
        return "{\"op\": \"" + operation + "\", \"result\": \"" + EchoTypes.extract(operation, result) + "\"}";
    }

    private static String exceptionJson(String operation, SystemException e) {
        String repositoryId = "IDL:omg.org/CORBA/" + e.getClass().getSimpleName() + ":1.0";
        return "{\"op\": \"" + operation + "\", \"exception\": \"" + repositoryId + "\", \"minor\": "
                + Integer.toUnsignedString(e.minor) + ", \"completed\": " + e.completed.value() + "}";
    }
}
