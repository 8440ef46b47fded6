package pycdrpeers;

import java.util.Properties;

/** What the Java test programs share: ORB properties, the stdin watch, hex. */
final class PeerSupport {
    private PeerSupport() {}

    /** ORB properties from "name=value" arguments; they select the ORB too (org.omg.CORBA.ORBClass,
     *  given by tests/peers/java_orb.py), so one program runs on any ORB's jars. */
    static Properties orbProperties(String[] args) {
        Properties props = new Properties();
        for (String arg : args) {
            int eq = arg.indexOf('=');
            if (eq <= 0) {
                throw new IllegalArgumentException("expected name=value, got " + arg);
            }
            props.setProperty(arg.substring(0, eq), arg.substring(eq + 1));
        }
        return props;
    }

    /** Ends the process when standard input closes, so a test that dies leaves no peer behind. */
    static void exitWhenStdinCloses() {
        Thread watcher = new Thread(() -> {
            try {
                while (System.in.read() != -1) {
                    // Input is not used; only its end matters.
                }
            } catch (java.io.IOException ignored) {
                // A broken pipe means the parent is gone, same as end of input.
            }
            System.exit(0);
        }, "stdin-watcher");
        watcher.setDaemon(true);
        watcher.start();
    }

    static String toHex(byte[] bytes) {
        StringBuilder sb = new StringBuilder(bytes.length * 2);
        for (byte b : bytes) {
            sb.append(String.format("%02x", b & 0xff));
        }
        return sb.toString();
    }

    static byte[] fromHex(String hex) {
        if (hex.length() % 2 != 0) {
            throw new IllegalArgumentException("odd-length hex string");
        }
        byte[] bytes = new byte[hex.length() / 2];
        for (int i = 0; i < bytes.length; i++) {
            bytes[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        }
        return bytes;
    }
}
