package pycdrpeers;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Properties;

import org.omg.CORBA.ORB;

/**
 * ConformanceClient's calls, many cases in one JVM (the batch form of
 * tests/peers/java_conformance_client.py):
 *   ConformanceBatchClient DESCRIPTION_FILE [name=value ORB property ...]
 * reads one case a line on standard input, "IOR TAB OPERATION TAB ARGUMENTS_HEX TAB COUNT", makes
 * its calls on an ORB of its own (initialised for the case, shut down and destroyed after it, so
 * no connection or state is left for the next case), prints ConformanceClient's lines for them
 * and then "END 0". Anything thrown out of a case (a forward loop's StackOverflowError, say) is
 * printed on standard error, its lines are dropped and "END 1" ends the case: what
 * ConformanceClient's exit status says when the same is thrown out of its main. Exits when
 * standard input ends.
 */
public final class ConformanceBatchClient {
    public static void main(String[] args) throws java.io.IOException {
        if (args.length < 1) {
            System.err.println("usage: ConformanceBatchClient DESCRIPTION [name=value ...]");
            System.exit(2);
        }
        Properties props = PeerSupport.orbProperties(Arrays.copyOfRange(args, 1, args.length));
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isEmpty()) {
                continue;
            }
            String[] fields = line.split("\t", -1);
            List<String> lines = null;
            ORB orb = null;
            try {
                if (fields.length != 4) {
                    throw new IllegalArgumentException("expected IOR, OPERATION, ARGUMENTS_HEX, COUNT: " + line);
                }
                Properties caseProps = new Properties();
                caseProps.putAll(props);
                orb = ORB.init(new String[0], caseProps);
                lines = ConformanceClient.calls(orb, args[0], fields[0], fields[1], fields[2],
                                                Integer.parseInt(fields[3]));
            } catch (Throwable thrown) {
                thrown.printStackTrace();
                lines = null;
            } finally {
                if (orb != null) {
                    end(orb);
                }
            }
            if (lines != null) {
                for (String out : lines) {
                    System.out.println(out);
                }
            }
            System.out.println(lines != null ? "END 0" : "END 1");
            System.out.flush();
        }
        System.exit(0);
    }

    /** Shut down and destroy a case's ORB, closing its connections (what the process's exit
     *  does for ConformanceClient). */
    private static void end(ORB orb) {
        closeOutboundSockets(orb);
        try {
            orb.shutdown(false);
        } catch (Throwable e) {
            // A connection the crafted server left broken may not close cleanly.
        }
        try {
            orb.destroy();
        } catch (Throwable e) {
            // As above: the case's answers are already taken.
        }
    }

    /**
     * The JDK-lineage ORBs' destroy closes each outbound connection only after its reader's
     * temporary selector has closed, which takes the GlassFish ORB a second or two a case:
     * their sockets are closed first, so the case's connections end at once, as they do when
     * ConformanceClient's process exits. Through the ORB's transport manager (no API of
     * org.omg.CORBA): an ORB without one (JacORB, whose destroy closes at once) is left to
     * destroy.
     */
    private static void closeOutboundSockets(ORB orb) {
        try {
            Object transport = call(orb, "getTransportManager");
            for (Object cache : (Collection<?>) call(transport, "getOutboundConnectionCaches")) {
                for (Object connection : (Collection<?>) call(cache, "values")) {
                    Object socket = call(connection, "getSocket");
                    if (socket instanceof Socket) {
                        ((Socket) socket).close();
                    }
                }
            }
        } catch (ReflectiveOperationException | java.io.IOException | RuntimeException e) {
            // Not such an ORB, or a socket already closed: destroy closes what is left.
        }
    }

    private static Object call(Object target, String name) throws ReflectiveOperationException {
        Method method = target.getClass().getMethod(name);
        method.setAccessible(true);
        return method.invoke(target);
    }
}
