// An omniORB C++ servant for conformance/echo.idl: every operation returns its
// argument (echo_inout and echo_multi hand their inout values back, echo_raise
// raises Oops for a code other than 0, note is a oneway that keeps nothing).
// benchmarks/omniorb/build.sh compiles it with clang's trace-pc-guard and
// AddressSanitizer, links the coverage shim, and runs it under
// `pycdr fuzz --coverage sancov --spawn`.
//
//     echo_server [ORB options, e.g. -ORBendPoint giop:tcp:127.0.0.1:0]
//
// Serves one object under the fixed key "Echo" (omniINSPOA, so corbaloc
// works) and prints its IOR on stdout; runs until killed.
#include <iostream>

#include "echo.hh"

namespace {

// A copy of a fixed-size array: the C++ mapping returns arrays as slices the
// caller frees with the array's _free function.
template <typename Slice, typename Alloc>
Slice* copied(const Slice* from, unsigned long count, Alloc alloc) {
    Slice* to = alloc();
    for (unsigned long i = 0; i < count; i++)
        to[i] = from[i];
    return to;
}

class EchoServant : public POA_EchoAll::Echo {
  public:
    CORBA::Short echo_short(CORBA::Short v) override { return v; }
    CORBA::UShort echo_ushort(CORBA::UShort v) override { return v; }
    CORBA::Long echo_long(CORBA::Long v) override { return v; }
    CORBA::ULong echo_ulong(CORBA::ULong v) override { return v; }
    CORBA::LongLong echo_longlong(CORBA::LongLong v) override { return v; }
    CORBA::ULongLong echo_ulonglong(CORBA::ULongLong v) override { return v; }
    CORBA::Float echo_float(CORBA::Float v) override { return v; }
    CORBA::Double echo_double(CORBA::Double v) override { return v; }
    CORBA::Boolean echo_boolean(CORBA::Boolean v) override { return v; }
    CORBA::Char echo_char(CORBA::Char v) override { return v; }
    CORBA::Octet echo_octet(CORBA::Octet v) override { return v; }
    char* echo_string(const char* v) override { return CORBA::string_dup(v); }
    char* echo_short8(const char* v) override { return CORBA::string_dup(v); }
    CORBA::WChar echo_wchar(CORBA::WChar v) override { return v; }
    CORBA::WChar* echo_wstring(const CORBA::WChar* v) override { return CORBA::wstring_dup(v); }
    CORBA::Any* echo_any(const CORBA::Any& v) override { return new CORBA::Any(v); }
    EchoAll::Money echo_fixed(const EchoAll::Money& v) override { return v; }
    EchoAll::Color echo_color(EchoAll::Color v) override { return v; }
    EchoAll::Colors* echo_colors(const EchoAll::Colors& v) override { return new EchoAll::Colors(v); }
    EchoAll::Padding echo_padding(const EchoAll::Padding& v) override { return v; }
    EchoAll::Reverse echo_reverse(const EchoAll::Reverse& v) override { return v; }
    EchoAll::Mixed* echo_mixed(const EchoAll::Mixed& v) override { return new EchoAll::Mixed(v); }
    EchoAll::Choice* echo_choice(const EchoAll::Choice& v) override { return new EchoAll::Choice(v); }
    EchoAll::Flag* echo_flag(const EchoAll::Flag& v) override { return new EchoAll::Flag(v); }
    EchoAll::ByColor echo_bycolor(const EchoAll::ByColor& v) override { return v; }
    EchoAll::Longs* echo_longs(const EchoAll::Longs& v) override { return new EchoAll::Longs(v); }
    EchoAll::Octets* echo_octets(const EchoAll::Octets& v) override { return new EchoAll::Octets(v); }
    EchoAll::Strings* echo_strings(const EchoAll::Strings& v) override { return new EchoAll::Strings(v); }
    EchoAll::Records* echo_records(const EchoAll::Records& v) override { return new EchoAll::Records(v); }
    EchoAll::Matrix* echo_matrix(const EchoAll::Matrix& v) override { return new EchoAll::Matrix(v); }
    EchoAll::Bounded* echo_bounded(const EchoAll::Bounded& v) override { return new EchoAll::Bounded(v); }
    EchoAll::Triple_slice* echo_triple(const EchoAll::Triple v) override {
        return copied(v, 3, EchoAll::Triple_alloc);
    }
    EchoAll::Names_slice* echo_names(const EchoAll::Names v) override {
        return copied(v, 2, EchoAll::Names_alloc);
    }
    EchoAll::Grid_slice* echo_grid(const EchoAll::Grid v) override {
        EchoAll::Grid_slice* to = EchoAll::Grid_alloc();
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 2; j++)
                to[i][j] = v[i][j];
        return to;
    }
    EchoAll::Node* echo_node(const EchoAll::Node& v) override { return new EchoAll::Node(v); }
    EchoAll::Echo_ptr echo_object(EchoAll::Echo_ptr v) override { return EchoAll::Echo::_duplicate(v); }
    void echo_inout(CORBA::Long&, char*&) override {}
    CORBA::Long echo_multi(CORBA::Long a, CORBA::Double&) override { return a; }
    void echo_raise(CORBA::Long code) override {
        if (code != 0)
            throw EchoAll::Oops(code, "raised");
    }
    void note(const char*) override {}
    void counter(CORBA::Long value) override { counter_ = value; }
    CORBA::Long counter() override { return counter_; }

  private:
    CORBA::Long counter_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
    try {
        CORBA::ORB_var orb = CORBA::ORB_init(argc, argv);
        CORBA::Object_var poa_object = orb->resolve_initial_references("omniINSPOA");
        PortableServer::POA_var poa = PortableServer::POA::_narrow(poa_object);
        PortableServer::ObjectId_var id = PortableServer::string_to_ObjectId("Echo");
        EchoServant* servant = new EchoServant;
        poa->activate_object_with_id(id, servant);
        servant->_remove_ref();
        CORBA::Object_var reference = poa->id_to_reference(id);
        CORBA::String_var ior = orb->object_to_string(reference);
        PortableServer::POAManager_var manager = poa->the_POAManager();
        manager->activate();
        std::cout << ior.in() << std::endl;
        orb->run();
        orb->destroy();
    } catch (CORBA::SystemException& e) {
        std::cerr << "echo_server: CORBA::" << e._name() << std::endl;
        return 1;
    } catch (CORBA::Exception& e) {
        std::cerr << "echo_server: " << e._name() << std::endl;
        return 1;
    }
    return 0;
}
