// omniORB C++ Param_Test server and client (param.idl) with omniORB's SSL transport
// (libomnisslTP4), for `pycdr bench param --tls`: omniORB's own TLS/plain ratio.
//
//   param_tls server CA KEYFILE PORT TLSPORT      plain and TLS endpoints; prints IOR, READY;
//                                                 serves until stdin closes
//   param_tls client CA KEYFILE IOR ssl|tcp SECONDS REPEAT OP[,OP...]
//                                                 back-to-back twoway calls; prints JSON
// KEYFILE holds a certificate and its key (PEM; omniORB's SSL context wants one on the
// client side too, where no server asks for it here). The client chooses the transport with
// -ORBclientTransportRule. Values as param_common.py makes them.
#include <omniORB4/CORBA.h>
#include <omniORB4/sslContext.h>
#include <openssl/ssl.h>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>
#include "param.hh"
#include "serve_servant.h"      // tests/peers/omni_ssl

using namespace ParamTest;
static const int SEQUENCE_LENGTH = 16, STRING_LENGTH = 32;

class ParamImpl : public POA_ParamTest::Param_Test {
public:
  CORBA::Short test_short(CORBA::Short s1, CORBA::Short& s2, CORBA::Short_out s3) {
    s2 = s1; s3 = s1; return s1;
  }
  char* test_unbounded_string(const char* s1, char*& s2, CORBA::String_out s3) {
    CORBA::string_free(s2); s2 = CORBA::string_dup(s1); s3 = CORBA::string_dup(s1);
    return CORBA::string_dup(s1);
  }
  Fixed_Struct test_fixed_struct(const Fixed_Struct& s1, Fixed_Struct& s2, Fixed_Struct_out s3) {
    s2 = s1; s3 = s1; return s1;
  }
  Var_Struct* test_var_struct(const Var_Struct& s1, Var_Struct& s2, Var_Struct_out s3) {
    s2 = s1; s3 = new Var_Struct(s1); return new Var_Struct(s1);
  }
  Nested_Struct* test_nested_struct(const Nested_Struct& s1, Nested_Struct& s2,
                                    Nested_Struct_out s3) {
    s2 = s1; s3 = new Nested_Struct(s1); return new Nested_Struct(s1);
  }
  StrSeq* test_strseq(const StrSeq& s1, StrSeq& s2, StrSeq_out s3) {
    s2 = s1; s3 = new StrSeq(s1); return new StrSeq(s1);
  }
  StructSeq* test_struct_sequence(const StructSeq& s1, StructSeq& s2, StructSeq_out s3) {
    s2 = s1; s3 = new StructSeq(s1); return new StructSeq(s1);
  }
};

static Fixed_Struct fixed_struct(int i) {
  Fixed_Struct f;
  f.l = i; f.c = 'x'; f.s = i % 100; f.o = i % 256; f.f = 0.5f; f.b = true; f.d = i * 1.25;
  return f;
}

static Var_Struct var_struct() {
  Var_Struct v;
  v.dbl = 2.5; v.dummy1 = std::string(STRING_LENGTH, 'a').c_str(); v.boole = true;
  v.dummy2 = std::string(STRING_LENGTH, 'b').c_str(); v.shrt = 3;
  return v;
}

// One call of `op`; false if the answer is not (s1, s1, s1).
static bool call(Param_Test_ptr p, const std::string& op) {
  if (op == "test_short") {
    CORBA::Short s2 = 7, s3;
    CORBA::Short r = p->test_short(7, s2, s3);
    return r == 7 && s2 == 7 && s3 == 7;
  }
  if (op == "test_unbounded_string") {
    std::string v(STRING_LENGTH, 's');
    CORBA::String_var s2 = CORBA::string_dup(v.c_str()), s3;
    CORBA::String_var r = p->test_unbounded_string(v.c_str(), s2.inout(), s3.out());
    return v == r.in() && v == s2.in() && v == s3.in();
  }
  if (op == "test_fixed_struct") {
    Fixed_Struct s1 = fixed_struct(1), s2 = s1, s3;
    Fixed_Struct r = p->test_fixed_struct(s1, s2, s3);
    return r.l == 1 && s2.l == 1 && s3.l == 1 && r.d == s1.d;
  }
  if (op == "test_var_struct") {
    Var_Struct s1 = var_struct(), s2 = s1;
    Var_Struct_var s3;
    Var_Struct_var r = p->test_var_struct(s1, s2, s3.out());
    return std::strcmp(r->dummy1, s1.dummy1) == 0 && std::strcmp(s3->dummy2, s1.dummy2) == 0;
  }
  if (op == "test_nested_struct") {
    Nested_Struct s1; s1.vs = var_struct();
    Nested_Struct s2 = s1;
    Nested_Struct_var s3;
    Nested_Struct_var r = p->test_nested_struct(s1, s2, s3.out());
    return std::strcmp(r->vs.dummy1, s1.vs.dummy1) == 0 && s3->vs.shrt == 3;
  }
  if (op == "test_strseq") {
    StrSeq s1; s1.length(SEQUENCE_LENGTH);
    for (int i = 0; i < SEQUENCE_LENGTH; i++) {
      char text[32]; std::snprintf(text, sizeof text, "%016d", i);
      s1[i] = (const char*) text;      // (copied; a char* would be adopted)
    }
    StrSeq s2 = s1;
    StrSeq_var s3;
    StrSeq_var r = p->test_strseq(s1, s2, s3.out());
    return r->length() == s1.length() && std::strcmp(s3[5], s1[5]) == 0;
  }
  if (op == "test_struct_sequence") {
    StructSeq s1; s1.length(SEQUENCE_LENGTH);
    for (int i = 0; i < SEQUENCE_LENGTH; i++) s1[i] = fixed_struct(i);
    StructSeq s2 = s1;
    StructSeq_var s3;
    StructSeq_var r = p->test_struct_sequence(s1, s2, s3.out());
    return r->length() == s1.length() && s3[7].l == 7;
  }
  throw std::runtime_error("unknown operation " + op);
}

static int serve(int argc, char** argv) {
  // server CA KEYFILE PORT TLSPORT
  sslContext::certificate_authority_file = argv[2];
  sslContext::key_file = argv[3];
  sslContext::key_file_password = "";
  sslContext::verify_mode = SSL_VERIFY_NONE;     // no client authentication (as pycdr's)
  std::string tcp = std::string("giop:tcp:127.0.0.1:") + argv[4];
  std::string ssl = std::string("giop:ssl:127.0.0.1:") + argv[5];
  const char* options[][2] = {{"endPoint", tcp.c_str()}, {"endPoint", ssl.c_str()}, {0, 0}};
  int orb_argc = 1;
  CORBA::ORB_var orb = CORBA::ORB_init(orb_argc, argv, "omniORB4", options);
  return serve_servant(orb, new ParamImpl());
}

static int client(int argc, char** argv) {
  // client CA KEYFILE IOR ssl|tcp SECONDS REPEAT OPS
  sslContext::certificate_authority_file = argv[2];
  sslContext::key_file = argv[3];
  sslContext::key_file_password = "";
  argv++;                            // (the rest as without KEYFILE)
  std::string rule = std::string("* ") + argv[4];
  const char* options[][2] = {{"clientTransportRule", rule.c_str()}, {0, 0}};
  int orb_argc = 1;
  CORBA::ORB_var orb = CORBA::ORB_init(orb_argc, argv, "omniORB4", options);
  CORBA::Object_var obj = orb->string_to_object(argv[3]);
  Param_Test_var p = Param_Test::_narrow(obj);
  double seconds = std::atof(argv[5]);
  int repeat = std::atoi(argv[6]);
  std::vector<std::string> ops;
  std::stringstream list(argv[7]);
  for (std::string op; std::getline(list, op, ',');) ops.push_back(op);
  std::cout << "{\"results\": [";
  for (size_t k = 0; k < ops.size(); k++) {
    bool correct = call(p, ops[k]);
    std::cout << (k ? ", " : "") << "{\"operation\": \"" << ops[k] << "\", \"correct\": "
              << (correct ? "true" : "false") << ", \"calls_per_s\": [";
    for (int r = 0; r < repeat; r++) {
      long calls = 0;
      auto started = std::chrono::steady_clock::now();
      double elapsed = 0;
      while (elapsed < seconds) {
        for (int i = 0; i < 10; i++) call(p, ops[k]);
        calls += 10;
        elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      }
      std::cout << (r ? ", " : "") << calls / elapsed;
    }
    std::cout << "]}";
  }
  std::cout << "]}" << std::endl;
  orb->destroy();
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 6 && std::strcmp(argv[1], "server") == 0) return serve(argc, argv);
  if (argc >= 9 && std::strcmp(argv[1], "client") == 0) return client(argc, argv);
  std::cerr << "usage: param_tls server CA KEYFILE PORT TLSPORT | "
               "param_tls client CA KEYFILE IOR ssl|tcp SECONDS REPEAT OPS\n";
  return 2;
}
