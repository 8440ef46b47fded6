// A small GIOP server in Java (plain sockets, no ORB) for the fuzzer's dead-thread findings.
// Its thread "ServerSocketListener" accepts connections and starts a "Reader" thread for each,
// which answers every LocateRequest OBJECT_HERE and every Request that expects a response with
// an empty NO_EXCEPTION Reply. A Request whose bytes hold "plant" makes the listener thread die
// of an exception at its next accept, without a word (the uncaught-exception handler is silent,
// as in an ORB that swallows its threads' deaths): the process lives on, its port still
// accepts into the backlog, and no connection is served again. It prints a corbaloc URL and
// serves on 127.0.0.1 (a free port) until its standard input closes.
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

public class DeadListener {
    static volatile boolean planted = false;

    public static void main(String[] args) throws Exception {
        Thread.setDefaultUncaughtExceptionHandler((thread, error) -> { });
        ServerSocket server = new ServerSocket(0, 50, InetAddress.getByName("127.0.0.1"));
        Thread listener = new Thread(() -> {
            while (true) {
                Socket socket;
                try {
                    socket = server.accept();
                } catch (IOException e) {
                    return;
                }
                if (planted) {
                    throw new IllegalStateException("planted");
                }
                new Thread(() -> serve(socket), "Reader").start();
            }
        }, "ServerSocketListener");
        listener.start();
        System.out.println("corbaloc:iiop:1.2@127.0.0.1:" + server.getLocalPort() + "/Dead");
        System.out.flush();
        while (System.in.read() >= 0) {
            // until the fuzzer closes our standard input
        }
        System.exit(0);
    }

    static void serve(Socket socket) {
        try (Socket s = socket) {
            DataInputStream in = new DataInputStream(s.getInputStream());
            OutputStream out = s.getOutputStream();
            byte[] header = new byte[12];
            while (true) {
                in.readFully(header);
                ByteOrder order = (header[6] & 1) != 0 ? ByteOrder.LITTLE_ENDIAN : ByteOrder.BIG_ENDIAN;
                int size = ByteBuffer.wrap(header, 8, 4).order(order).getInt();
                if (size < 0 || size > (1 << 20)) {
                    return;
                }
                byte[] body = new byte[size];
                in.readFully(body);
                if (size < 5) {
                    continue;
                }
                int requestId = ByteBuffer.wrap(body, 0, 4).order(order).getInt();
                if (header[7] == 0) {
                    if (new String(body, StandardCharsets.ISO_8859_1).contains("plant")) {
                        planted = true;
                    }
                    if ((body[4] & 1) != 0) {
                        out.write(reply(header, order, 1, requestId, 0));
                    }
                } else if (header[7] == 3) {
                    out.write(reply(header, order, 4, requestId, 1));
                }
            }
        } catch (IOException | RuntimeException e) {
            // the connection is closed
        }
    }

    static byte[] reply(byte[] header, ByteOrder order, int type, int requestId, int status) {
        ByteBuffer b = ByteBuffer.allocate(type == 4 ? 20 : 24).order(order);
        b.put(new byte[] {'G', 'I', 'O', 'P', header[4], header[5], header[6], (byte) type});
        b.putInt(type == 4 ? 8 : 12);
        b.putInt(requestId);
        b.putInt(status);
        if (type == 1) {
            b.putInt(0);            // no service contexts
        }
        return b.array();
    }
}
