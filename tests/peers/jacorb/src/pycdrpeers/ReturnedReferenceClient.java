package pycdrpeers;

import java.util.Arrays;

import org.omg.CORBA.Any;
import org.omg.CORBA.ORB;
import org.omg.CORBA.Request;
import org.omg.CORBA.SystemException;
import org.omg.CORBA.TCKind;
import org.omg.CORBA.TypeCode;

/**
 * A client of conformance/echo.idl's EchoAll::Echo that calls on a reference the server returned,
 * in one process (DII, so no stubs): echo_object(ARGUMENT_IOR) on IOR, then echo_long(7) on the
 * reference that came back.
 * Usage: ReturnedReferenceClient IOR ARGUMENT_IOR [name=value ORB property ...]
 * Prints one JSON line: {"returned": "IOR:...", "echo_long": 7}, or {"exception": "IDL:..."} when a
 * call failed.
 */
public final class ReturnedReferenceClient {
    private static final String ECHO_ID = "IDL:EchoAll/Echo:1.0";

    public static void main(String[] args) {
        if (args.length < 2) {
            System.err.println("usage: ReturnedReferenceClient IOR ARGUMENT_IOR [name=value ...]");
            System.exit(2);
        }
        ORB orb = ORB.init(new String[0], PeerSupport.orbProperties(Arrays.copyOfRange(args, 2, args.length)));
        TypeCode echoType = orb.create_interface_tc(ECHO_ID, "Echo");
        String line;
        try {
            org.omg.CORBA.Object target = orb.string_to_object(args[0]);
            Request make = target._request("echo_object");
            make.add_in_arg().insert_Object(orb.string_to_object(args[1]), echoType);
            make.set_return_type(echoType);
            make.invoke();
            org.omg.CORBA.Object returned = make.return_value().extract_Object();
            Request call = returned._request("echo_long");
            Any argument = call.add_in_arg();
            argument.insert_long(7);
            call.set_return_type(orb.get_primitive_tc(TCKind.tk_long));
            call.invoke();
            line = "{\"returned\": \"" + orb.object_to_string(returned) + "\", \"echo_long\": "
                    + call.return_value().extract_long() + "}";
        } catch (SystemException e) {
            String id = e.getClass().getName().replace("org.omg.CORBA.", "IDL:omg.org/CORBA/") + ":1.0";
            line = "{\"exception\": \"" + id + "\"}";
        }
        System.out.println(line);
        System.out.flush();
        try {
            orb.shutdown(false);
        } catch (SystemException e) {
            // The answer is out.
        }
        System.exit(0);
    }
}
