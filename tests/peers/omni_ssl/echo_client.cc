// An omniORB C++ client on omniORB's SSL transport (libomnisslTP4), for pycdr's TLS tests:
// calls the echo operations of tests/peers/echo.idl on IOR over TLS only.
// Usage: echo_client CA_FILE KEY_FILE IOR
// KEY_FILE holds the client certificate and its private key (PEM), as omniORB's sslContext
// wants; omniORB 4.2 cannot start its SSL transport without one (ORB_init raises INITIALIZE),
// so the client always has one: sent when the server asks for it.  Prints one line a call: "OP ok VALUE" or "OP exception NAME", and exits 0
// when every call was made (whatever the answers), 1 when the reference did not narrow.
#include <omniORB4/CORBA.h>
#include <omniORB4/sslContext.h>
#include <openssl/ssl.h>
#include <iostream>
#include "echo.hh"

template <class Call>
static void report(const char* op, Call call) {
  try {
    auto value = call();           // (before printing: a call that raises prints no "ok")
    std::cout << op << " ok " << value << std::endl;
  } catch (CORBA::SystemException& e) {
    std::cout << op << " exception " << e._name() << " minor " << e.minor() << std::endl;
  } catch (CORBA::Exception& e) {
    std::cout << op << " exception " << e._name() << std::endl;
  }
}

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: echo_client CA KEY IOR\n";
    return 2;
  }
  sslContext::certificate_authority_file = argv[1];
  sslContext::key_file = argv[2];
  sslContext::key_file_password = "";
  sslContext::verify_mode = SSL_VERIFY_PEER;          // the server's certificate, by the CA
  // TLS or nothing: a plain TCP address in the IOR is not used.
  const char* options[][2] = {{"clientTransportRule", "* ssl"}, {0, 0}};
  int orb_argc = 1;
  CORBA::ORB_var orb = CORBA::ORB_init(orb_argc, argv, "omniORB4", options);
  try {
    CORBA::Object_var obj = orb->string_to_object(argv[3]);
    PycdrTest::Echo_var echo = PycdrTest::Echo::_narrow(obj);
    if (CORBA::is_nil(echo)) {
      std::cout << "narrow exception not an Echo" << std::endl;
      return 1;
    }
    report("echo_long", [&] { return echo->echo_long(-7); });
    report("echo_double", [&] { return echo->echo_double(2.5); });
    report("echo_string", [&] {
      CORBA::String_var s = echo->echo_string("from omniORB C++ over TLS");
      return std::string(s.in());
    });
    report("echo_octets", [&] {
      PycdrTest::Octets in;
      in.length(3);
      in[0] = 0; in[1] = 1; in[2] = 255;
      PycdrTest::Octets_var out = echo->echo_octets(in);
      std::string hex;
      for (CORBA::ULong i = 0; i < out->length(); ++i) {
        static const char digits[] = "0123456789abcdef";
        hex += digits[out[i] >> 4];
        hex += digits[out[i] & 15];
      }
      return hex;
    });
  } catch (CORBA::SystemException& e) {
    std::cout << "narrow exception " << e._name() << " minor " << e.minor() << std::endl;
    return 1;
  }
  orb->destroy();
  return 0;
}
