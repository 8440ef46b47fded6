// An omniORB C++ echo server on omniORB's SSL transport (libomnisslTP4), for pycdr's TLS tests.
// Usage: echo_server CA_FILE KEY_FILE REQUIRE_CLIENT_CERT(0|1) -ORBendPoint giop:ssl:127.0.0.1:PORT ...
// KEY_FILE holds the certificate and its private key (PEM), as omniORB's sslContext wants.
// Prints "IOR:..." and "READY"; exits when its stdin closes.
#include <omniORB4/CORBA.h>
#include <omniORB4/sslContext.h>
#include <openssl/ssl.h>
#include <iostream>
#include "echo.hh"
#include "serve_servant.h"

class EchoImpl : public POA_PycdrTest::Echo {
public:
  CORBA::Long echo_long(CORBA::Long value) { return value; }
  CORBA::Double echo_double(CORBA::Double value) { return value; }
  char* echo_string(const char* value) { return CORBA::string_dup(value); }
  CORBA::WChar* echo_wstring(const CORBA::WChar* value) { return CORBA::wstring_dup(value); }
  CORBA::WChar echo_wchar(CORBA::WChar value) { return value; }
  PycdrTest::Octets* echo_octets(const PycdrTest::Octets& value) {
    return new PycdrTest::Octets(value);
  }
};

int main(int argc, char** argv) {
  if (argc < 4) {
    std::cerr << "usage: echo_server CA KEY REQUIRE_CLIENT_CERT [-ORB options]\n";
    return 2;
  }
  sslContext::certificate_authority_file = argv[1];
  sslContext::key_file = argv[2];
  sslContext::key_file_password = "";
  sslContext::verify_mode = argv[3][0] == '1'
      ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_NONE;
  int orb_argc = argc - 3;
  char** orb_argv = argv + 3;
  orb_argv[0] = argv[0];
  CORBA::ORB_var orb = CORBA::ORB_init(orb_argc, orb_argv);
  return serve_servant(orb, new EchoImpl());
}
