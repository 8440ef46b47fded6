package pycdrpeers;

import java.nio.charset.StandardCharsets;
import java.util.Properties;

import org.omg.CORBA.Any;
import org.omg.CORBA.ORB;
import org.omg.CORBA.TCKind;
import org.omg.CORBA.TypeCode;

/**
 * The echo operations the JacORB peers know, and the text form their values take on the command
 * line and in the JSON the client prints. Both mirror tests/peers/echo.idl and
 * tests/peers/echo_ops.py; the text form is chosen so that every value crosses the process
 * boundary exactly, whatever the locale:
 *   long            decimal
 *   double          16 hex digits of the IEEE-754 bits
 *   string, wstring, wchar   hex of the UTF-8 bytes
 *   octets          hex of the bytes
 */
final class EchoTypes {
    static final String ECHO_REPOSITORY_ID = "IDL:PycdrTest/Echo:1.0";
    static final String OCTETS_REPOSITORY_ID = "IDL:PycdrTest/Octets:1.0";

    private EchoTypes() {}

    /** The parameter (and result) TypeCode of an echo operation, or null if there is no such operation. */
    static TypeCode typeOf(ORB orb, String operation) {
        switch (operation) {
            case "echo_long": return orb.get_primitive_tc(TCKind.tk_long);
            case "echo_double": return orb.get_primitive_tc(TCKind.tk_double);
            case "echo_string": return orb.create_string_tc(0);
            case "echo_wstring": return orb.create_wstring_tc(0);
            case "echo_wchar": return orb.get_primitive_tc(TCKind.tk_wchar);
            case "echo_octets":
                return orb.create_alias_tc(OCTETS_REPOSITORY_ID, "Octets",
                        orb.create_sequence_tc(0, orb.get_primitive_tc(TCKind.tk_octet)));
            default: return null;
        }
    }

    /** Fills an Any of the operation's type from the text form. */
    static void insert(ORB orb, String operation, Any any, String text) {
        switch (operation) {
            case "echo_long": any.insert_long(Integer.parseInt(text)); break;
            case "echo_double": any.insert_double(Double.longBitsToDouble(Long.parseUnsignedLong(text, 16))); break;
            case "echo_string": any.insert_string(utf8(text)); break;
            case "echo_wstring": any.insert_wstring(utf8(text)); break;
            case "echo_wchar": {
                String s = utf8(text);
                if (s.length() != 1) {
                    throw new IllegalArgumentException("a wchar is one UTF-16 unit, got " + s.length());
                }
                any.insert_wchar(s.charAt(0));
                break;
            }
            case "echo_octets": {
                byte[] bytes = fromHex(text);
                org.omg.CORBA.portable.OutputStream out = orb.create_output_stream();
                out.write_ulong(bytes.length);
                out.write_octet_array(bytes, 0, bytes.length);
                any.read_value(out.create_input_stream(), typeOf(orb, operation));
                break;
            }
            default: throw new IllegalArgumentException("unknown echo operation " + operation);
        }
    }

    /** The text form of an Any of the operation's type. */
    static String extract(String operation, Any any) {
        switch (operation) {
            case "echo_long": return Integer.toString(any.extract_long());
            case "echo_double": return String.format("%016x", Double.doubleToRawLongBits(any.extract_double()));
            case "echo_string": return toHex(any.extract_string().getBytes(StandardCharsets.UTF_8));
            case "echo_wstring": return toHex(any.extract_wstring().getBytes(StandardCharsets.UTF_8));
            case "echo_wchar": return toHex(String.valueOf(any.extract_wchar()).getBytes(StandardCharsets.UTF_8));
            case "echo_octets": {
                org.omg.CORBA.portable.InputStream in = any.create_input_stream();
                int length = in.read_ulong();
                byte[] bytes = new byte[length];
                in.read_octet_array(bytes, 0, length);
                return toHex(bytes);
            }
            default: throw new IllegalArgumentException("unknown echo operation " + operation);
        }
    }

    /** ORB properties from "name=value" arguments, on top of the ones that select JacORB. */
    static Properties orbProperties(String[] args) {
        Properties props = new Properties();
        props.setProperty("org.omg.CORBA.ORBClass", "org.jacorb.orb.ORB");
        props.setProperty("org.omg.CORBA.ORBSingletonClass", "org.jacorb.orb.ORBSingleton");
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

    private static String utf8(String hex) {
        return new String(fromHex(hex), StandardCharsets.UTF_8);
    }
}
