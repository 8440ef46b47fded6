package pycdrpeers;

import java.util.Arrays;
import java.util.Properties;

import org.omg.CORBA.Any;
import org.omg.CORBA.ORB;
import org.omg.CORBA.Request;
import org.omg.CORBA.StructMember;
import org.omg.CORBA.SystemException;
import org.omg.CORBA.TCKind;
import org.omg.CORBA.TypeCode;
import org.omg.CORBA.UnknownUserException;

/**
 * JacORB as a conformance client command (pycdr conformance --client):
 *   ConformanceClient IOR OPERATION ARGS_JSON [name=value JacORB property ...]
 * Calls one operation of conformance/echo.idl through the DII (no IDL compiler) with the single
 * scalar argument in ARGS_JSON (the contract's arguments: [42], [7], ["hello"], ["wide"]) and
 * prints what came back as one JSON line:
 *   {"result": VALUE}
 *   {"system_exception": {"name": "TRANSIENT", "minor": 0, "completed": 1}}
 *   {"user_exception": {"id": "IDL:EchoAll/Oops:1.0", "members": {"code": 7, "why": "..."}}}
 * The client's own reply timeout is 5 s unless a property says otherwise.
 */
public final class ConformanceClient {
    public static void main(String[] args) {
        if (args.length < 3) {
            System.err.println("usage: ConformanceClient IOR OPERATION ARGS_JSON [name=value ...]");
            System.exit(2);
        }
        Properties props = PeerSupport.orbProperties(Arrays.copyOfRange(args, 3, args.length));
        props.putIfAbsent("jacorb.connection.client.pending_reply_timeout", "5000");
        props.putIfAbsent("jacorb.connection.client.connect_timeout", "5000");
        ORB orb = ORB.init(new String[0], props);
        String line;
        try {
            line = call(orb, args[0], args[1], scalar(args[2]));
        } catch (SystemException e) {
            line = systemException(e);
        }
        System.out.println(line);
        System.out.flush();
        orb.shutdown(false);
        System.exit(0);
    }

    /** The one scalar of a JSON array like [42] or ["hello"] (the contract's arguments). */
    static String scalar(String json) {
        String inner = json.trim();
        if (!inner.startsWith("[") || !inner.endsWith("]")) {
            throw new IllegalArgumentException("expected a JSON array, got " + json);
        }
        inner = inner.substring(1, inner.length() - 1).trim();
        if (inner.startsWith("\"") && inner.endsWith("\"")) {
            return inner.substring(1, inner.length() - 1);
        }
        return inner;
    }

    static String call(ORB orb, String reference, String operation, String argument) {
        org.omg.CORBA.Object target = orb.string_to_object(reference);
        Request request = target._request(operation);
        TypeCode result;
        switch (operation) {
            case "echo_long":
                request.add_in_arg().insert_long(Integer.parseInt(argument));
                result = orb.get_primitive_tc(TCKind.tk_long);
                break;
            case "echo_longlong":
                request.add_in_arg().insert_longlong(Long.parseLong(argument));
                result = orb.get_primitive_tc(TCKind.tk_longlong);
                break;
            case "echo_string":
                request.add_in_arg().insert_string(argument);
                result = orb.create_string_tc(0);
                break;
            case "echo_wstring":
                request.add_in_arg().insert_wstring(argument);
                result = orb.create_wstring_tc(0);
                break;
            case "echo_raise":
                request.add_in_arg().insert_long(Integer.parseInt(argument));
                result = orb.get_primitive_tc(TCKind.tk_void);
                request.exceptions().add(oopsType(orb));
                break;
            case "echo_padding":
            case "echo_reverse": {
                // The two structs of echo.idl the padding cases use, built from their JSON.
                boolean charFirst = operation.equals("echo_padding");
                result = structType(orb, charFirst);
                Any value = orb.create_any();
                org.omg.CORBA.portable.OutputStream out = value.create_output_stream();
                char c1 = jsonMember(argument, "c1").charAt(1);
                long ll = Long.parseLong(jsonMember(argument, "ll"));
                if (charFirst) {
                    out.write_char(c1);
                    out.write_longlong(ll);
                } else {
                    out.write_longlong(ll);
                    out.write_char(c1);
                }
                request.add_in_arg().read_value(out.create_input_stream(), result);
                break;
            }
            default:
                throw new IllegalArgumentException("not a contract operation: " + operation);
        }
        request.set_return_type(result);
        request.invoke();
        Exception error = request.env().exception();
        if (error instanceof SystemException) {
            return systemException((SystemException) error);
        }
        if (error instanceof UnknownUserException) {
            return userException(((UnknownUserException) error).except);
        }
        if (error != null) {
            return "{\"system_exception\": {\"name\": \"UNKNOWN\", \"minor\": 0, \"completed\": 2, "
                + "\"java\": " + quote(error.toString()) + "}}";
        }
        return "{\"result\": " + value(request.return_value()) + "}";
    }

    /** EchoAll::Padding (char c1; long long ll) or EchoAll::Reverse (long long ll; char c1). */
    static TypeCode structType(ORB orb, boolean charFirst) {
        StructMember c1 = new StructMember("c1", orb.get_primitive_tc(TCKind.tk_char), null);
        StructMember ll = new StructMember("ll", orb.get_primitive_tc(TCKind.tk_longlong), null);
        return charFirst
            ? orb.create_struct_tc("IDL:EchoAll/Padding:1.0", "Padding", new StructMember[] {c1, ll})
            : orb.create_struct_tc("IDL:EchoAll/Reverse:1.0", "Reverse", new StructMember[] {ll, c1});
    }

    /** The text of member NAME in a flat JSON object like {"c1": "a", "ll": 1} (strings quoted). */
    static String jsonMember(String json, String name) {
        java.util.regex.Matcher m = java.util.regex.Pattern
            .compile("\"" + name + "\"\\s*:\\s*(\"[^\"]*\"|-?[0-9]+)").matcher(json);
        if (!m.find()) {
            throw new IllegalArgumentException("no member " + name + " in " + json);
        }
        return m.group(1);
    }

    static TypeCode oopsType(ORB orb) {
        StructMember[] members = {
            new StructMember("code", orb.get_primitive_tc(TCKind.tk_long), null),
            new StructMember("why", orb.create_string_tc(0), null)};
        return orb.create_exception_tc("IDL:EchoAll/Oops:1.0", "Oops", members);
    }

    static String value(Any any) {
        switch (any.type().kind().value()) {
            case TCKind._tk_long: return Integer.toString(any.extract_long());
            case TCKind._tk_longlong: return Long.toString(any.extract_longlong());
            case TCKind._tk_string: return quote(any.extract_string());
            case TCKind._tk_wstring: return quote(any.extract_wstring());
            case TCKind._tk_void: return "null";
            case TCKind._tk_struct: {
                org.omg.CORBA.portable.InputStream in = any.create_input_stream();
                boolean charFirst;
                try {
                    charFirst = any.type().member_name(0).equals("c1");
                } catch (org.omg.CORBA.UserException e) {
                    return quote("unreadable struct " + e);
                }
                String c1;
                long ll;
                if (charFirst) {
                    c1 = quote(String.valueOf(in.read_char()));
                    ll = in.read_longlong();
                } else {
                    ll = in.read_longlong();
                    c1 = quote(String.valueOf(in.read_char()));
                }
                return charFirst ? "{\"c1\": " + c1 + ", \"ll\": " + ll + "}"
                                 : "{\"ll\": " + ll + ", \"c1\": " + c1 + "}";
            }
            default: return quote("unexpected result type " + any.type().kind().value());
        }
    }

    static String userException(Any except) {
        String id;
        try {
            id = except.type().id();
        } catch (org.omg.CORBA.TypeCodePackage.BadKind e) {
            id = "";
        }
        String members = "{}";
        if (id.equals("IDL:EchoAll/Oops:1.0")) {
            org.omg.CORBA.portable.InputStream in = except.create_input_stream();
            in.read_string();         // an exception's marshalled value starts with its id
            members = "{\"code\": " + in.read_long() + ", \"why\": " + quote(in.read_string()) + "}";
        }
        return "{\"user_exception\": {\"id\": " + quote(id) + ", \"members\": " + members + "}}";
    }

    static String systemException(SystemException e) {
        return "{\"system_exception\": {\"name\": " + quote(e.getClass().getSimpleName())
            + ", \"minor\": " + (e.minor & 0xFFFFFFFFL) + ", \"completed\": " + e.completed.value() + "}}";
    }

    static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            if (c == '"' || c == '\\' || c < 0x20 || c > 0x7e) {
                out.append(String.format("\\u%04x", (int) c));
            } else {
                out.append(c);
            }
        }
        return out.append('"').toString();
    }
}
