package pycdrpeers;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Properties;

import org.omg.CORBA.ORB;
import org.omg.CORBA.Request;
import org.omg.CORBA.SystemException;

/**
 * The Java ORBs' half of the conformance client driver (tests/peers/java_conformance_client.py,
 * which turns the contract's JSON into CDR and back), on JacORB, the OpenJDK ORB or the GlassFish
 * ORB:
 *   ConformanceClient DESCRIPTION_FILE IOR OPERATION ARGUMENTS_HEX COUNT [name=value ORB property ...]
 * Makes COUNT calls of OPERATION (DII, from the interface description pycdr wrote) with the in
 * values in ARGUMENTS_HEX (a CDR encapsulation). One call is invoked; more are all sent
 * (send_deferred) before the first answer is awaited, so they are outstanding together; a oneway
 * operation's calls are sent with send_oneway, and nothing is awaited. Prints one
 * line a call, in EchoClient's form ({"op", "reply"} / {"op", "user_exception", "body"} /
 * {"op", "exception", "minor", "completed"}), in the order the calls were made.
 */
public final class ConformanceClient {
    public static void main(String[] args) throws java.io.IOException {
        if (args.length < 5) {
            System.err.println("usage: ConformanceClient DESCRIPTION IOR OPERATION ARGUMENTS_HEX COUNT [name=value ...]");
            System.exit(2);
        }
        Properties props = PeerSupport.orbProperties(Arrays.copyOfRange(args, 5, args.length));
        ORB orb = ORB.init(new String[0], props);
        List<String> lines = calls(orb, args[0], args[1], args[2], args[3], Integer.parseInt(args[4]));
        for (String line : lines) {
            System.out.println(line);
        }
        System.out.flush();
        try {
            orb.shutdown(false);
        } catch (SystemException e) {
            // The answers are out; a connection the crafted server left broken may not close cleanly.
        }
        System.exit(0);
    }

    /** COUNT calls of OPERATION on the object REFERENCE through ORB: the lines to print. */
    static List<String> calls(ORB orb, String descriptionFile, String reference, String opName,
                              String argumentsHex, int count) throws java.io.IOException {
        ValueStreams streams = ValueStreams.forOrb(orb);
        InterfaceDescription description = InterfaceDescription.read(streams, descriptionFile);
        InterfaceDescription.Operation operation = description.operations.get(opName);
        if (operation == null) {
            throw new IllegalArgumentException("the description has no operation " + opName);
        }
        List<String> lines = new ArrayList<>();
        try {
            org.omg.CORBA.Object target = orb.string_to_object(reference);
            List<Request> requests = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                requests.add(EchoClient.request(streams, target, operation, argumentsHex));
            }
            boolean oneway = operation.call.equals("oneway");
            if (oneway) {
                // No reply is awaited: each call is sent, and returns.
                for (Request request : requests) {
                    request.send_oneway();
                    lines.add(EchoClient.onewaySent(operation));
                }
                requests.clear();
            } else if (count == 1) {
                requests.get(0).invoke();
            } else {
                for (Request request : requests) {
                    request.send_deferred();
                }
            }
            for (Request request : requests) {
                try {
                    if (count > 1) {
                        request.get_response();
                    }
                    lines.add(EchoClient.outcome(streams, operation, request));
                } catch (SystemException e) {
                    lines.add(EchoClient.start(operation) + EchoClient.systemExceptionJson(e));
                } catch (org.omg.CORBA.WrongTransaction e) {
                    throw new IllegalStateException("a deferred call outside any transaction", e);
                }
            }
        } catch (SystemException e) {
            while (lines.size() < count) {
                lines.add(EchoClient.start(operation) + EchoClient.systemExceptionJson(e));
            }
        }
        return lines;
    }
}
