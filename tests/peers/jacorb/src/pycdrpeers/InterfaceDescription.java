package pycdrpeers;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.omg.CORBA.ARG_IN;
import org.omg.CORBA.ARG_INOUT;
import org.omg.CORBA.ARG_OUT;
import org.omg.CORBA.Any;
import org.omg.CORBA.TCKind;
import org.omg.CORBA.TypeCode;

/**
 * An IDL interface as pycdr describes it (tests/peers/jacorb_interface.py writes the file; its
 * docstring gives the format): repository ids, and for each operation its call kind, result,
 * parameters and exceptions, all TypeCodes read from pycdr's CDR encapsulations by the ORB the
 * program runs on (ValueStreams). No IDL compiler and no hand-written TypeCode is involved.
 *
 * Values cross between pycdr and the ORB as GIOP 1.2 CDR encapsulations (hex), read into and
 * written from Anys by the ORB (readValues / writeValues).
 */
final class InterfaceDescription {
    static final class Parameter {
        final String name;
        final int mode;          // ARG_IN.value, ARG_OUT.value or ARG_INOUT.value
        final TypeCode type;

        Parameter(String name, int mode, TypeCode type) {
            this.name = name;
            this.mode = mode;
            this.type = type;
        }

        boolean sentByCaller() {
            return mode != ARG_OUT.value;
        }

        boolean sentBack() {
            return mode != ARG_IN.value;
        }
    }

    static final class Operation {
        final String name;
        final String call;       // "twoway", "oneway", "get" or "set"
        final TypeCode result;
        final List<Parameter> parameters = new ArrayList<>();
        final List<TypeCode> exceptions = new ArrayList<>();

        Operation(String name, String call, TypeCode result) {
            this.name = name;
            this.call = call;
            this.result = result;
        }

        boolean hasResult() {
            return result.kind() != TCKind.tk_void;
        }

        /** The TypeCodes of the in/inout values, in parameter order. */
        List<TypeCode> argumentTypes() {
            List<TypeCode> types = new ArrayList<>();
            for (Parameter p : parameters) {
                if (p.sentByCaller()) {
                    types.add(p.type);
                }
            }
            return types;
        }

        /** The TypeCodes of what comes back: the result unless void, then the out/inout values. */
        List<TypeCode> replyTypes() {
            List<TypeCode> types = new ArrayList<>();
            if (hasResult()) {
                types.add(result);
            }
            for (Parameter p : parameters) {
                if (p.sentBack()) {
                    types.add(p.type);
                }
            }
            return types;
        }
    }

    final String repositoryId;
    final List<String> isA = new ArrayList<>();
    final Map<String, Operation> operations = new LinkedHashMap<>();

    private InterfaceDescription(String repositoryId) {
        this.repositoryId = repositoryId;
    }

    static InterfaceDescription read(ValueStreams streams, String path) throws IOException {
        InterfaceDescription description = null;
        Operation current = null;
        int lineNumber = 0;
        for (String line : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8)) {
            lineNumber++;
            if (line.isEmpty()) {
                continue;
            }
            String[] fields = line.split(" ");
            String where = path + ":" + lineNumber + ": ";
            switch (fields[0]) {
                case "interface":
                    expectFields(fields, 2, where);
                    description = new InterfaceDescription(fields[1]);
                    break;
                case "is_a":
                    expectFields(fields, 2, where);
                    requireInterface(description, where).isA.add(fields[1]);
                    break;
                case "operation":
                    expectFields(fields, 4, where);
                    current = new Operation(fields[1], fields[2], streams.readTypeCode(PeerSupport.fromHex(fields[3])));
                    requireInterface(description, where).operations.put(current.name, current);
                    break;
                case "param":
                    expectFields(fields, 4, where);
                    requireOperation(current, where).parameters.add(
                            new Parameter(fields[1], mode(fields[2], where), streams.readTypeCode(PeerSupport.fromHex(fields[3]))));
                    break;
                case "raises":
                    expectFields(fields, 2, where);
                    requireOperation(current, where).exceptions.add(streams.readTypeCode(PeerSupport.fromHex(fields[1])));
                    break;
                default:
                    throw new IllegalArgumentException(where + "unknown record " + fields[0]);
            }
        }
        return requireInterface(description, path + ": ");
    }

    private static void expectFields(String[] fields, int count, String where) {
        if (fields.length != count) {
            throw new IllegalArgumentException(where + fields[0] + " takes " + (count - 1) + " fields");
        }
    }

    private static InterfaceDescription requireInterface(InterfaceDescription description, String where) {
        if (description == null) {
            throw new IllegalArgumentException(where + "no interface record first");
        }
        return description;
    }

    private static Operation requireOperation(Operation operation, String where) {
        if (operation == null) {
            throw new IllegalArgumentException(where + "no operation record before this one");
        }
        return operation;
    }

    private static int mode(String text, String where) {
        switch (text) {
            case "in": return ARG_IN.value;
            case "out": return ARG_OUT.value;
            case "inout": return ARG_INOUT.value;
            default: throw new IllegalArgumentException(where + "bad parameter mode " + text);
        }
    }

    /** Anys of the given types, read in order from the hex of an encapsulation. */
    static Any[] readValues(ValueStreams streams, List<TypeCode> types, String hex) {
        return streams.readValues(types, PeerSupport.fromHex(hex));
    }

    /** The hex of an encapsulation holding the values of the Anys, in order. */
    static String writeValues(ValueStreams streams, List<Any> values) {
        return PeerSupport.toHex(streams.writeValues(values));
    }

    static List<Any> list(Any... values) {
        List<Any> list = new ArrayList<>();
        Collections.addAll(list, values);
        return list;
    }
}
