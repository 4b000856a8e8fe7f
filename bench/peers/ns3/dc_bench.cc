// dc_bench.cc -- slacknet's ns-3.44 reference-peer scenario.
//
// Leaf-spine datacenter fabric, DCTCP everywhere, step ECN marking (RED with
// MinTh == MaxTh == K, instantaneous queue) on every switch port and every
// host NIC, a static per-port buffer, per-flow (5-tuple hash) ECMP, and a flow
// list read from a file.  One TCP connection per flow; the sender pushes
// exactly size_bytes and closes.  Writes one line per flow in slacknet's
// record format:
//
//   # id src dst start_s size_bytes incast fct_ns ideal_ns slowdown
//
// fct_ns = -1 for flows that did not finish before the stop time.
//
// Built against the PyPI ns3==3.44.post0 wheel by bench/peers/ns3/ns3peer.py;
// see bench/peers/ns3/README.md for the model, point by point.

#include "ns3/core-module.h"
#include "ns3/internet-module.h"
#include "ns3/network-module.h"
#include "ns3/point-to-point-module.h"
#include "ns3/traffic-control-module.h"

#include <chrono>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

using namespace ns3;

namespace
{

// ---------------------------------------------------------------------------
// Addressing.  Host h (global index leaf*H + server) sits on the /30 subnet
// 10.0.0.0 + 4h: host = .+1, leaf port = .+2.  Leaf l <-> spine s links use
// 11.0.0.0 + 4(l*S + s): leaf = .+1, spine = .+2.  A switch recovers the
// destination host index from the address alone.
// ---------------------------------------------------------------------------
const uint32_t kHostBase = 0x0A000000; // 10.0.0.0
const uint32_t kFabricBase = 0x0B000000; // 11.0.0.0

inline Ipv4Address
HostAddr(uint32_t h)
{
    return Ipv4Address(kHostBase + 4 * h + 1);
}

inline uint64_t
Mix64(uint64_t x)
{
    // splitmix64 finalizer: a well-mixed, platform-independent flow hash.
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

} // namespace

// ---------------------------------------------------------------------------
// LeafSpineRouting: static leaf-spine forwarding with per-flow ECMP.
//
// Vanilla ns-3 only offers per-packet random ECMP (Ipv4GlobalRouting
// RandomEcmpRouting), which reorders every flow.  Real switches hash the
// 5-tuple, so every packet of a connection takes the same spine.  This
// protocol is installed on every switch: a leaf sends traffic for its own
// servers down the host port and everything else up to spine
// hash(src ip, dst ip, proto, src port, dst port, seed) mod S; a spine sends
// to the destination's leaf.  The two directions of a connection (data and
// ACKs) hash independently, as on real hardware.
// ---------------------------------------------------------------------------
class LeafSpineRouting : public Ipv4RoutingProtocol
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("slacknet::LeafSpineRouting")
                                .SetParent<Ipv4RoutingProtocol>()
                                .SetGroupName("Internet");
        return tid;
    }

    enum Role
    {
        LEAF,
        SPINE
    };

    void Configure(Role role,
                   uint32_t myLeaf,
                   uint32_t hostsPerLeaf,
                   uint32_t nHosts,
                   uint64_t seed,
                   std::vector<uint32_t> downIf, // leaf: per server; spine: per leaf
                   std::vector<uint32_t> upIf)   // leaf: per spine; spine: unused
    {
        m_role = role;
        m_myLeaf = myLeaf;
        m_hostsPerLeaf = hostsPerLeaf;
        m_nHosts = nHosts;
        m_seed = seed;
        m_downRoute = MakeRoutes(downIf);
        m_upRoute = MakeRoutes(upIf);
    }

    Ptr<Ipv4Route> RouteOutput(Ptr<Packet> p,
                               const Ipv4Header& header,
                               Ptr<NetDevice> oif,
                               Socket::SocketErrno& sockerr) override
    {
        // Switches never originate traffic.
        sockerr = Socket::ERROR_NOROUTETOHOST;
        return nullptr;
    }

    bool RouteInput(Ptr<const Packet> p,
                    const Ipv4Header& header,
                    Ptr<const NetDevice> idev,
                    const UnicastForwardCallback& ucb,
                    const MulticastForwardCallback& mcb,
                    const LocalDeliverCallback& lcb,
                    const ErrorCallback& ecb) override
    {
        uint32_t iif = m_ipv4->GetInterfaceForDevice(idev);
        Ipv4Address dst = header.GetDestination();
        if (m_ipv4->IsDestinationAddress(dst, iif))
        {
            if (!lcb.IsNull())
            {
                lcb(p, header, iif);
                return true;
            }
            return false;
        }
        uint32_t d = dst.Get();
        if (d < kHostBase || d >= kHostBase + 4 * m_nHosts)
        {
            return false;
        }
        uint32_t h = (d - kHostBase) >> 2;
        uint32_t dstLeaf = h / m_hostsPerLeaf;
        Ptr<Ipv4Route> rt;
        if (m_role == SPINE)
        {
            rt = m_downRoute[dstLeaf];
        }
        else if (dstLeaf == m_myLeaf)
        {
            rt = m_downRoute[h % m_hostsPerLeaf];
        }
        else
        {
            rt = m_upRoute[PickSpine(p, header)];
        }
        ucb(rt, p, header);
        return true;
    }

    void NotifyInterfaceUp(uint32_t) override
    {
    }

    void NotifyInterfaceDown(uint32_t) override
    {
    }

    void NotifyAddAddress(uint32_t, Ipv4InterfaceAddress) override
    {
    }

    void NotifyRemoveAddress(uint32_t, Ipv4InterfaceAddress) override
    {
    }

    void SetIpv4(Ptr<Ipv4> ipv4) override
    {
        m_ipv4 = ipv4;
    }

    void PrintRoutingTable(Ptr<OutputStreamWrapper> stream, Time::Unit) const override
    {
        *stream->GetStream() << "LeafSpineRouting role=" << (m_role == LEAF ? "leaf" : "spine")
                             << " down=" << m_downRoute.size() << " up=" << m_upRoute.size()
                             << "\n";
    }

  private:
    std::vector<Ptr<Ipv4Route>> MakeRoutes(const std::vector<uint32_t>& ifs)
    {
        std::vector<Ptr<Ipv4Route>> out;
        for (uint32_t i : ifs)
        {
            Ptr<Ipv4Route> r = Create<Ipv4Route>();
            Ipv4Address local = m_ipv4->GetAddress(i, 0).GetLocal();
            // Point-to-point /30: the peer is the other usable address.
            uint32_t a = local.Get();
            uint32_t peer = ((a & 3) == 1) ? a + 1 : a - 1;
            r->SetSource(local);
            r->SetGateway(Ipv4Address(peer));
            r->SetOutputDevice(m_ipv4->GetNetDevice(i));
            out.push_back(r);
        }
        return out;
    }

  public:
    // Hook for ECMP modes that pin a spine per flow id (see --ecmp).  Returns
    // a spine index, or -1 to fall back to the 5-tuple hash.
    static Callback<int64_t, Ipv4Address, uint16_t, Ipv4Address, uint16_t> s_pinSpine;

  private:
    uint32_t PickSpine(Ptr<const Packet> p, const Ipv4Header& h) const
    {
        uint32_t ports = 0;
        uint8_t proto = h.GetProtocol();
        if ((proto == 6 || proto == 17) && p->GetSize() >= 4)
        {
            uint8_t b[4];
            p->CopyData(b, 4); // IP header already removed: src port, dst port
            ports = (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
        }
        if (!s_pinSpine.IsNull())
        {
            int64_t s = s_pinSpine(h.GetSource(), uint16_t(ports >> 16), h.GetDestination(),
                                   uint16_t(ports & 0xffff));
            if (s >= 0)
            {
                return uint32_t(s) % m_upRoute.size();
            }
        }
        return FlowHash(h, proto, ports) % m_upRoute.size();
    }

    uint32_t FlowHash(const Ipv4Header& h, uint8_t proto, uint32_t ports) const
    {
        uint64_t x = m_seed;
        x = Mix64(x ^ h.GetSource().Get());
        x = Mix64(x ^ h.GetDestination().Get());
        x = Mix64(x ^ ((uint64_t(proto) << 32) | ports));
        return uint32_t(x >> 32);
    }

    Ptr<Ipv4> m_ipv4;
    Role m_role{LEAF};
    uint32_t m_myLeaf{0};
    uint32_t m_hostsPerLeaf{1};
    uint32_t m_nHosts{0};
    uint64_t m_seed{0};
    std::vector<Ptr<Ipv4Route>> m_downRoute;
    std::vector<Ptr<Ipv4Route>> m_upRoute;
};

NS_OBJECT_ENSURE_REGISTERED(LeafSpineRouting);
Callback<int64_t, Ipv4Address, uint16_t, Ipv4Address, uint16_t> LeafSpineRouting::s_pinSpine;

class LeafSpineRoutingHelper : public Ipv4RoutingHelper
{
  public:
    LeafSpineRoutingHelper* Copy() const override
    {
        return new LeafSpineRoutingHelper(*this);
    }

    Ptr<Ipv4RoutingProtocol> Create(Ptr<Node>) const override
    {
        return CreateObject<LeafSpineRouting>();
    }
};

// ---------------------------------------------------------------------------
// Flows.
// ---------------------------------------------------------------------------
namespace
{

struct Flow
{
    uint32_t id;
    uint32_t src;
    uint32_t dst;
    std::string startStr; // as read, printed back unchanged
    int64_t startNs;
    uint64_t size;
    int incast;
    uint64_t queued = 0;    // bytes handed to the sender socket
    uint64_t received = 0;  // bytes read by the receiver
    int64_t rxDoneNs = -1;  // receiver has all bytes
    int64_t ackDoneNs = -1; // sender has the ACK of the last byte
    uint32_t retx = 0;         // retransmitted segments
    uint32_t recoveries = 0;   // fast-recovery entries
    uint32_t lossEpisodes = 0; // timeout episodes (entries into CA_LOSS)
    // Retransmissions by the sender's congestion state when sent: ns-3 resends what SACK reports
    // lost in any state (NextSeg), also outside fast recovery and timeouts.
    uint32_t retxByState[TcpSocketState::CA_LAST_STATE] = {};
    TcpSocketState::TcpCongState_t state = TcpSocketState::CA_OPEN;
    Ptr<Socket> tx;
    Ptr<Socket> rx;
};

std::vector<Flow> g_flows;
std::vector<Ptr<Node>> g_hosts;
std::unordered_map<uint64_t, uint32_t> g_byEndpoint; // (src ip << 16 | src port) -> flow
uint32_t g_done = 0;
bool g_fctAtSender = false;
const uint16_t kSinkPort = 9;
const uint32_t kChunk = 65536;

inline uint64_t
EndpointKey(Ipv4Address a, uint16_t port)
{
    return (uint64_t(a.Get()) << 16) | port;
}

// --ecmp=flowid / flowidhash: pin both directions of a flow to one spine
// chosen from the flow id (for A/B tests against other simulators' choices).
std::string g_ecmpMode = "hash";
uint64_t g_ecmpSeed = 1;
uint32_t g_hostsPerLeaf = 1;
uint64_t g_spines = 1;

// slacknet's hash3 (crates/sim/src/route.rs): a SplitMix64 finalizer over a linear
// combination of three words, so that --ecmp=slacknet picks the spines slacknet picks.
inline uint64_t
SlacknetHash3(uint64_t a, uint64_t b, uint64_t c)
{
    uint64_t z = a * 0x9E3779B97F4A7C15ULL + b * 0xC2B2AE3D27D4EB4FULL + c * 0x165667B19E3779F9ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

int64_t
PinSpine(Ipv4Address src, uint16_t sport, Ipv4Address dst, uint16_t dport)
{
    auto it = g_byEndpoint.find(EndpointKey(src, sport));
    if (it == g_byEndpoint.end())
    {
        it = g_byEndpoint.find(EndpointKey(dst, dport));
        if (it == g_byEndpoint.end())
        {
            return -1;
        }
    }
    uint64_t id = g_flows[it->second].id;
    if (g_ecmpMode == "slacknet")
    {
        // slacknet's routing.mode = "ecmp" (crates/sim/src/route.rs, hash3 and member): the
        // packet's own leaf (its source host's) hashes (flow id, leaf, seed) and takes the
        // upper 32 bits' share of its spines, so data and ACKs hash independently there as here.
        uint32_t leaf = ((src.Get() - kHostBase) / 4) / g_hostsPerLeaf;
        uint64_t key = SlacknetHash3(id, leaf, g_ecmpSeed);
        return int64_t(((key >> 32) * g_spines) >> 32);
    }
    if (g_ecmpMode == "flowid")
    {
        return int64_t((id + g_ecmpSeed) & 0x7fffffff);
    }
    return int64_t(Mix64(id ^ (g_ecmpSeed << 32)) >> 33);
}

void
FlowFinished(Flow& f)
{
    (void)f;
    if (++g_done == g_flows.size())
    {
        Simulator::Stop(); // nothing left to measure
    }
}

void
FillSocket(uint32_t i, Ptr<Socket> s, uint32_t /*avail*/)
{
    Flow& f = g_flows[i];
    while (f.queued < f.size)
    {
        uint32_t avail = s->GetTxAvailable();
        if (avail == 0)
        {
            return;
        }
        uint32_t n = uint32_t(std::min<uint64_t>({f.size - f.queued, avail, kChunk}));
        int r = s->Send(Create<Packet>(n));
        if (r <= 0)
        {
            return;
        }
        f.queued += uint32_t(r);
    }
    if (f.queued == f.size)
    {
        f.queued++; // close once
        s->Close(); // FIN rides on the last data segment
    }
}

void
ConnectOk(uint32_t i, Ptr<Socket> s)
{
    FillSocket(i, s, 0);
}

void
ConnectFail(uint32_t i, Ptr<Socket>)
{
    std::cerr << "flow " << g_flows[i].id << ": connection failed\n";
}

void
OnHighestRxAck(uint32_t i, SequenceNumber32, SequenceNumber32 v)
{
    Flow& f = g_flows[i];
    // ns-3 ISN is 0, the SYN takes sequence 0, data bytes are 1..size.
    if (f.ackDoneNs < 0 && uint64_t(v.GetValue()) >= f.size + 1)
    {
        f.ackDoneNs = Simulator::Now().GetNanoSeconds();
        if (g_fctAtSender)
        {
            FlowFinished(f);
        }
    }
}

void
OnRecv(uint32_t i, Ptr<Socket> s)
{
    Flow& f = g_flows[i];
    Ptr<Packet> p;
    while ((p = s->Recv()))
    {
        if (p->GetSize() == 0)
        {
            break;
        }
        f.received += p->GetSize();
    }
    if (f.rxDoneNs < 0 && f.received >= f.size)
    {
        f.rxDoneNs = Simulator::Now().GetNanoSeconds();
        if (!g_fctAtSender)
        {
            FlowFinished(f);
        }
    }
}

void
OnAccept(Ptr<Socket> s, const Address& from)
{
    InetSocketAddress a = InetSocketAddress::ConvertFrom(from);
    auto it = g_byEndpoint.find(EndpointKey(a.GetIpv4(), a.GetPort()));
    if (it == g_byEndpoint.end())
    {
        std::cerr << "accepted a connection of no known flow\n";
        return;
    }
    g_flows[it->second].rx = s;
    s->SetRecvCallback(MakeBoundCallback(&OnRecv, it->second));
}

// Loss recovery, summed over every sender (printed in the summary line): retransmitted
// segments, fast-recovery entries and timeout episodes (entries into CA_LOSS: a timeout that
// fires again before recovery ends is not counted again).
uint64_t g_retx = 0;
uint64_t g_recoveries = 0;
uint64_t g_lossEpisodes = 0;

void
OnRetransmission(uint32_t i, Ptr<const Packet>, const TcpHeader&, const Address&, const Address&,
                 Ptr<const TcpSocketBase>)
{
    g_retx++;
    g_flows[i].retx++;
    g_flows[i].retxByState[g_flows[i].state]++;
}

void
OnCongState(uint32_t i, TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    g_flows[i].state = now;
    if (now == TcpSocketState::CA_RECOVERY)
    {
        g_recoveries++;
        g_flows[i].recoveries++;
    }
    else if (now == TcpSocketState::CA_LOSS)
    {
        g_lossEpisodes++;
        g_flows[i].lossEpisodes++;
    }
}

// One flow's sender, segment by segment (--traceFlow, --traceOut): what it sends and receives,
// its window and its congestion state, for comparing a flow's recovery with slacknet's.
int64_t g_traceFlow = -1;
FILE* g_trace = nullptr;

void
TraceTxRx(const char* what, Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase>)
{
    std::fprintf(g_trace, "%" PRId64 " %s seq=%u ack=%u len=%u flags=%s\n",
                 Simulator::Now().GetNanoSeconds(), what, h.GetSequenceNumber().GetValue(),
                 h.GetAckNumber().GetValue(), p->GetSize(), TcpHeader::FlagsToString(h.GetFlags()).c_str());
}

void
TraceTx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s)
{
    TraceTxRx("tx", p, h, s);
}

void
TraceRx(Ptr<const Packet> p, const TcpHeader& h, Ptr<const TcpSocketBase> s)
{
    TraceTxRx("rx", p, h, s);
}

void
TraceCwnd(uint32_t, uint32_t now)
{
    std::fprintf(g_trace, "%" PRId64 " cwnd %u\n", Simulator::Now().GetNanoSeconds(), now);
}

void
TraceState(TcpSocketState::TcpCongState_t, TcpSocketState::TcpCongState_t now)
{
    std::fprintf(g_trace, "%" PRId64 " state %s\n", Simulator::Now().GetNanoSeconds(),
                 TcpSocketState::TcpCongStateName[now]);
}

// The traced flow's packets at every queue disc (--traceFlow): enqueued, marked or dropped,
// where, and the disc's backlog then, for comparing drops hop by hop with `slacknet trace`.
Ipv4Address g_traceAddr;
uint16_t g_tracePort = 0;

void
TraceQueue(std::string where, const char* what, Ptr<const QueueDisc> q, Ptr<const QueueDiscItem> item)
{
    if (g_tracePort == 0 && g_traceFlow != -2)
    {
        return;
    }
    Ptr<const Ipv4QueueDiscItem> ip = DynamicCast<const Ipv4QueueDiscItem>(item);
    if (!ip || ip->GetHeader().GetProtocol() != 6 || item->GetPacket()->GetSize() < 20)
    {
        return;
    }
    Ptr<Packet> c = item->GetPacket()->Copy();
    TcpHeader th;
    c->RemoveHeader(th);
    const Ipv4Header& h = ip->GetHeader();
    bool data, ack;
    uint64_t id = uint64_t(g_traceFlow);
    if (g_traceFlow == -2)
    {
        auto it = g_byEndpoint.find(EndpointKey(h.GetSource(), th.GetSourcePort()));
        data = it != g_byEndpoint.end();
        if (!data)
        {
            it = g_byEndpoint.find(EndpointKey(h.GetDestination(), th.GetDestinationPort()));
        }
        ack = !data && it != g_byEndpoint.end();
        if ((!data && !ack) || !g_flows[it->second].incast)
        {
            return;
        }
        id = g_flows[it->second].id;
    }
    else
    {
        data = h.GetSource() == g_traceAddr && th.GetSourcePort() == g_tracePort;
        ack = h.GetDestination() == g_traceAddr && th.GetDestinationPort() == g_tracePort;
    }
    if (!data && !ack)
    {
        return;
    }
    std::fprintf(g_trace, "%" PRId64 " flow=%" PRIu64 " %s %s %s seq=%u ack=%u len=%u qbytes=%u\n",
                 Simulator::Now().GetNanoSeconds(), id, what, where.c_str(), data ? "data" : "ack",
                 th.GetSequenceNumber().GetValue(), th.GetAckNumber().GetValue(), c->GetSize(),
                 q->GetNBytes());
}

void
TraceEnq(std::string where, Ptr<const QueueDisc> q, Ptr<const QueueDiscItem> item)
{
    TraceQueue(where, "enq", q, item);
}

void
TraceDrop(std::string where, Ptr<const QueueDisc> q, Ptr<const QueueDiscItem> item)
{
    TraceQueue(where, "drop", q, item);
}

void
TraceMark(std::string where, Ptr<const QueueDisc> q, Ptr<const QueueDiscItem> item, const char*)
{
    TraceQueue(where, "mark", q, item);
}

void
StartFlow(uint32_t i)
{
    Flow& f = g_flows[i];
    Ptr<Socket> s = Socket::CreateSocket(g_hosts[f.src], TcpSocketFactory::GetTypeId());
    if (s->Bind() != 0)
    {
        std::cerr << "flow " << f.id << ": no free ephemeral port on host " << f.src << "\n";
        return;
    }
    Address local;
    s->GetSockName(local);
    uint16_t port = InetSocketAddress::ConvertFrom(local).GetPort();
    g_byEndpoint[EndpointKey(HostAddr(f.src), port)] = i;
    s->TraceConnectWithoutContext("HighestRxAck", MakeBoundCallback(&OnHighestRxAck, i));
    s->TraceConnectWithoutContext("Retransmission", MakeBoundCallback(&OnRetransmission, i));
    s->TraceConnectWithoutContext("CongState", MakeBoundCallback(&OnCongState, i));
    if (g_trace && int64_t(f.id) == g_traceFlow)
    {
        g_traceAddr = HostAddr(f.src);
        g_tracePort = port;
        s->TraceConnectWithoutContext("Tx", MakeCallback(&TraceTx));
        s->TraceConnectWithoutContext("Rx", MakeCallback(&TraceRx));
        s->TraceConnectWithoutContext("CongestionWindow", MakeCallback(&TraceCwnd));
        s->TraceConnectWithoutContext("CongState", MakeCallback(&TraceState));
    }
    s->SetConnectCallback(MakeBoundCallback(&ConnectOk, i), MakeBoundCallback(&ConnectFail, i));
    s->SetSendCallback(MakeBoundCallback(&FillSocket, i));
    s->Connect(InetSocketAddress(HostAddr(f.dst), kSinkPort));
    f.tx = s;
}

bool
ReadFlows(const std::string& path, uint32_t nHosts)
{
    std::ifstream in(path);
    if (!in)
    {
        std::cerr << "cannot open flow list " << path << "\n";
        return false;
    }
    std::string line;
    uint32_t lineNo = 0;
    while (std::getline(in, line))
    {
        lineNo++;
        size_t b = line.find_first_not_of(" \t\r");
        if (b == std::string::npos || line[b] == '#')
        {
            continue;
        }
        std::istringstream ss(line);
        Flow f;
        double start;
        if (!(ss >> f.id >> f.src >> f.dst >> f.startStr >> f.size >> f.incast))
        {
            std::cerr << path << ":" << lineNo << ": expected 'id src dst start_s size_bytes incast'\n";
            return false;
        }
        start = std::stod(f.startStr);
        f.startNs = std::llround(start * 1e9);
        if (f.src >= nHosts || f.dst >= nHosts || f.src == f.dst || f.size == 0 || start < 0)
        {
            std::cerr << path << ":" << lineNo << ": bad flow (src/dst out of range for "
                      << nHosts << " hosts, src == dst, size 0 or negative start)\n";
            return false;
        }
        g_flows.push_back(f);
    }
    return true;
}

} // namespace

int
main(int argc, char* argv[])
{
    auto wallStart = std::chrono::steady_clock::now();

    uint32_t leaves = 2;
    uint32_t hostsPerLeaf = 16;
    uint32_t spines = 4;
    double rateGbps = 10.0;
    uint32_t delayNs = 3000;
    uint32_t bufferBytes = 350000;
    uint32_t hostBufferBytes = 0;
    uint32_t ecnK = 10;
    uint32_t segSize = 1400;
    std::string redMode = "bytes";
    std::string flowsPath;
    std::string outPath = "fct.txt";
    std::string flowStatsPath;
    std::string traceOutPath;
    double stopS = -1.0;
    uint64_t ecmpSeed = 1;
    bool sack = true;
    std::string recovery = "prr";
    std::string fctAt = "receiver";
    uint32_t sndBuf = 0;
    uint32_t rcvBuf = 0;
    uint32_t minRtoUs = 10000;
    uint32_t devQueuePkts = 1;

    CommandLine cmd(__FILE__);
    cmd.AddValue("leaves", "number of leaf (ToR) switches", leaves);
    cmd.AddValue("hostsPerLeaf", "servers per leaf", hostsPerLeaf);
    cmd.AddValue("spines", "number of spine switches", spines);
    cmd.AddValue("rateGbps", "rate of every link, Gb/s", rateGbps);
    cmd.AddValue("delayNs", "propagation delay of every link, ns", delayNs);
    cmd.AddValue("bufferBytes", "static buffer per port (queue disc MaxSize), bytes", bufferBytes);
    cmd.AddValue("hostBufferBytes",
                 "host NIC queue disc MaxSize, bytes (0: bufferBytes, as the switch ports)",
                 hostBufferBytes);
    cmd.AddValue("ecnK", "ECN marking threshold K, packets (x 1400 B in bytes mode)", ecnK);
    cmd.AddValue("redMode", "RED threshold unit: bytes (K*1400 B) or packets", redMode);
    cmd.AddValue("segSize", "TCP segment size (MSS), bytes", segSize);
    cmd.AddValue("flows", "flow list: id src dst start_s size_bytes incast", flowsPath);
    cmd.AddValue("out", "output FCT record file", outPath);
    cmd.AddValue("flowStats",
                 "optional file of each flow's loss recovery: id retx recoveries loss_episodes "
                 "(retransmitted segments, fast-recovery entries, timeout episodes), then the "
                 "retransmissions by the congestion state they were sent in (open, disorder, cwr, "
                 "recovery, loss)",
                 flowStatsPath);
    cmd.AddValue("traceFlow", "flow id whose sender --traceOut traces (-1: none; -2: every incast flow's packets at every queue disc)", g_traceFlow);
    cmd.AddValue("traceOut", "file for --traceFlow's trace: t_ns tx|rx seq ack len flags, cwnd, state",
                 traceOutPath);
    cmd.AddValue("stopS", "stop time, s (default: last start + 10 s; the run also ends "
                          "as soon as every flow has finished)", stopS);
    cmd.AddValue("ecmpSeed", "seed of the per-flow ECMP hash", ecmpSeed);
    cmd.AddValue("ecmp",
                 "per-flow ECMP: hash (5-tuple hash at the source leaf, default), flowid "
                 "(spine = (id + ecmpSeed) mod S, both directions) or flowidhash (spine = "
                 "hash(id, ecmpSeed) mod S, both directions) or slacknet (slacknet's ECMP "
                 "hash of (id, leaf, ecmpSeed) at each packet's source leaf: the same paths as "
                 "slacknet's routing.mode = \"ecmp\" with hash_seed = ecmpSeed)",
                 g_ecmpMode);
    cmd.AddValue("sack", "TCP SACK (ns-3 default true)", sack);
    cmd.AddValue("recovery",
                 "TCP recovery ops, which pace fast recovery and DCTCP's ECN cut (CA_CWR): prr "
                 "(ns-3's default TcpPrrRecovery) or classic (TcpClassicRecovery: cwnd = ssthresh "
                 "at once)",
                 recovery);
    cmd.AddValue("fctAt", "FCT end: receiver (all bytes received) or sender (last byte ACKed)",
                 fctAt);
    cmd.AddValue("sndBuf", "TCP SndBufSize bytes (0 = ns-3 default 131072)", sndBuf);
    cmd.AddValue("rcvBuf", "TCP RcvBufSize bytes (0 = ns-3 default 131072)", rcvBuf);
    cmd.AddValue("minRtoUs", "TCP minimum RTO, us", minRtoUs);
    cmd.AddValue("devQueuePkts",
                 "PointToPointNetDevice TX queue, packets, below the RED queue disc (ns-3 "
                 "default would be 100; 1 keeps the backlog in RED where it is marked)",
                 devQueuePkts);
    cmd.Parse(argc, argv);

    if (flowsPath.empty())
    {
        std::cerr << "--flows=FILE is required\n";
        return 2;
    }
    if (recovery != "prr" && recovery != "classic")
    {
        std::cerr << "--recovery must be prr or classic\n";
        return 2;
    }
    if (fctAt != "receiver" && fctAt != "sender")
    {
        std::cerr << "--fctAt must be receiver or sender\n";
        return 2;
    }
    if (g_traceFlow >= 0 || g_traceFlow == -2)
    {
        if (traceOutPath.empty())
        {
            std::cerr << "--traceFlow needs --traceOut=FILE\n";
            return 2;
        }
        g_trace = std::fopen(traceOutPath.c_str(), "w");
        if (!g_trace)
        {
            std::cerr << "cannot write " << traceOutPath << "\n";
            return 2;
        }
    }
    if (redMode != "bytes" && redMode != "packets")
    {
        std::cerr << "--redMode must be bytes or packets\n";
        return 2;
    }
    g_fctAtSender = (fctAt == "sender");
    if (g_ecmpMode != "hash" && g_ecmpMode != "flowid" && g_ecmpMode != "flowidhash" &&
        g_ecmpMode != "slacknet")
    {
        std::cerr << "--ecmp must be hash, flowid, flowidhash or slacknet\n";
        return 2;
    }
    g_ecmpSeed = ecmpSeed;
    g_hostsPerLeaf = hostsPerLeaf;
    g_spines = spines;
    if (g_ecmpMode != "hash")
    {
        LeafSpineRouting::s_pinSpine = MakeCallback(&PinSpine);
    }
    const uint32_t nHosts = leaves * hostsPerLeaf;
    if (leaves == 0 || hostsPerLeaf == 0 || spines == 0 || nHosts > (1u << 20))
    {
        std::cerr << "bad topology\n";
        return 2;
    }
    if (!ReadFlows(flowsPath, nHosts))
    {
        return 2;
    }

    // ---- TCP: DCTCP everywhere -------------------------------------------
    Config::SetDefault("ns3::TcpL4Protocol::SocketType", TypeIdValue(TcpDctcp::GetTypeId()));
    Config::SetDefault("ns3::TcpSocket::SegmentSize", UintegerValue(segSize));
    Config::SetDefault("ns3::TcpSocket::InitialCwnd", UintegerValue(10));
    Config::SetDefault("ns3::TcpSocket::DelAckCount", UintegerValue(1));
    Config::SetDefault("ns3::TcpSocketBase::MinRto", TimeValue(MicroSeconds(minRtoUs)));
    Config::SetDefault("ns3::TcpSocketBase::Sack", BooleanValue(sack));
    Config::SetDefault("ns3::TcpL4Protocol::RecoveryType",
                       TypeIdValue(recovery == "classic" ? TcpClassicRecovery::GetTypeId()
                                                         : TcpPrrRecovery::GetTypeId()));
    if (sndBuf)
    {
        Config::SetDefault("ns3::TcpSocket::SndBufSize", UintegerValue(sndBuf));
    }
    if (rcvBuf)
    {
        Config::SetDefault("ns3::TcpSocket::RcvBufSize", UintegerValue(rcvBuf));
    }

    // ---- Nodes and links --------------------------------------------------
    NodeContainer hosts;
    NodeContainer leafNodes;
    NodeContainer spineNodes;
    hosts.Create(nHosts);
    leafNodes.Create(leaves);
    spineNodes.Create(spines);
    for (uint32_t h = 0; h < nHosts; ++h)
    {
        g_hosts.push_back(hosts.Get(h));
    }

    InternetStackHelper hostStack;
    Ipv4StaticRoutingHelper staticRouting;
    hostStack.SetRoutingHelper(staticRouting);
    hostStack.Install(hosts);
    InternetStackHelper switchStack;
    LeafSpineRoutingHelper lsRouting;
    switchStack.SetRoutingHelper(lsRouting);
    switchStack.Install(leafNodes);
    switchStack.Install(spineNodes);

    std::ostringstream rate;
    rate << rateGbps << "Gbps";
    PointToPointHelper p2p;
    p2p.SetDeviceAttribute("DataRate", StringValue(rate.str()));
    p2p.SetChannelAttribute("Delay", TimeValue(NanoSeconds(delayNs)));
    // One packet of device queue: the queue disc above holds the buffer, so
    // RED sees (and marks on) the real backlog.
    p2p.SetQueue("ns3::DropTailQueue", "MaxSize",
                 QueueSizeValue(QueueSize(QueueSizeUnit::PACKETS, std::max(1u, devQueuePkts))));

    // RED as a step marker: MinTh == MaxTh == K, QW = 1 (instantaneous
    // queue), Gentle off (>= K marks with probability 1), ECN marks instead
    // of drops; drop-tail only when the static buffer is full.
    const bool bytesMode = (redMode == "bytes");
    const double th = bytesMode ? double(ecnK) * 1400.0 : double(ecnK);
    const QueueSize maxSize = bytesMode
                                  ? QueueSize(QueueSizeUnit::BYTES, bufferBytes)
                                  : QueueSize(QueueSizeUnit::PACKETS,
                                              std::max<uint32_t>(1, bufferBytes / 1400));
    auto redWith = [&](QueueSize size) {
        TrafficControlHelper h;
        h.SetRootQueueDisc("ns3::RedQueueDisc",
                           "MaxSize", QueueSizeValue(size),
                           "MinTh", DoubleValue(th),
                           "MaxTh", DoubleValue(th),
                           "QW", DoubleValue(1.0),
                           "Gentle", BooleanValue(false),
                           "UseEcn", BooleanValue(true),
                           "UseHardDrop", BooleanValue(false),
                           "MeanPktSize", UintegerValue(1400),
                           "LinkBandwidth", DataRateValue(DataRate(rate.str())),
                           "LinkDelay", TimeValue(NanoSeconds(delayNs)));
        return h;
    };
    TrafficControlHelper red = redWith(maxSize);
    // The host NICs' queue disc: the ports' unless hostBufferBytes says otherwise.
    const uint32_t hostBytes = hostBufferBytes ? hostBufferBytes : bufferBytes;
    TrafficControlHelper redHost =
        redWith(bytesMode ? QueueSize(QueueSizeUnit::BYTES, hostBytes)
                          : QueueSize(QueueSizeUnit::PACKETS, std::max<uint32_t>(1, hostBytes / 1400)));

    // leaf -> per-server interface index, per-spine interface index
    std::vector<std::vector<uint32_t>> leafDown(leaves), leafUp(leaves);
    std::vector<std::vector<uint32_t>> spineDown(spines);
    QueueDiscContainer qdiscs;

    for (uint32_t h = 0; h < nHosts; ++h)
    {
        uint32_t l = h / hostsPerLeaf;
        NetDeviceContainer d = p2p.Install(hosts.Get(h), leafNodes.Get(l));
        // Before addressing, else ns-3 installs its default qdisc; host side first.
        qdiscs.Add(redHost.Install(d.Get(0)));
        qdiscs.Add(red.Install(d.Get(1)));
        Ipv4AddressHelper addr;
        addr.SetBase(Ipv4Address(kHostBase + 4 * h), Ipv4Mask("255.255.255.252"));
        Ipv4InterfaceContainer ifc = addr.Assign(d);
        leafDown[l].push_back(ifc.Get(1).second);
        Ptr<Ipv4StaticRouting> sr =
            staticRouting.GetStaticRouting(hosts.Get(h)->GetObject<Ipv4>());
        sr->SetDefaultRoute(ifc.GetAddress(1), ifc.Get(0).second);
    }
    for (uint32_t l = 0; l < leaves; ++l)
    {
        for (uint32_t s = 0; s < spines; ++s)
        {
            NetDeviceContainer d = p2p.Install(leafNodes.Get(l), spineNodes.Get(s));
            qdiscs.Add(red.Install(d));
            Ipv4AddressHelper addr;
            addr.SetBase(Ipv4Address(kFabricBase + 4 * (l * spines + s)),
                         Ipv4Mask("255.255.255.252"));
            Ipv4InterfaceContainer ifc = addr.Assign(d);
            leafUp[l].push_back(ifc.Get(0).second);
            spineDown[s].push_back(ifc.Get(1).second);
        }
    }
    for (uint32_t l = 0; l < leaves; ++l)
    {
        Ptr<LeafSpineRouting> r =
            DynamicCast<LeafSpineRouting>(leafNodes.Get(l)->GetObject<Ipv4>()->GetRoutingProtocol());
        r->Configure(LeafSpineRouting::LEAF, l, hostsPerLeaf, nHosts, ecmpSeed, leafDown[l], leafUp[l]);
    }
    if (g_trace)
    {
        // qdiscs' order, as installed above: per host its NIC and its leaf's port to it, then
        // per (leaf, spine) the leaf's port up and the spine's port down.
        for (uint32_t i = 0; i < qdiscs.GetN(); ++i)
        {
            std::ostringstream w;
            if (i < 2 * nHosts)
            {
                uint32_t h = i / 2;
                w << (i % 2 ? "leaf" + std::to_string(h / hostsPerLeaf) + "->host" : "nic") << h;
            }
            else
            {
                uint32_t j = (i - 2 * nHosts) / 2;
                uint32_t l = j / spines, sp = j % spines;
                w << ((i - 2 * nHosts) % 2 ? "spine" + std::to_string(sp) + "->leaf" + std::to_string(l)
                                           : "leaf" + std::to_string(l) + "->spine" + std::to_string(sp));
            }
            Ptr<QueueDisc> q = qdiscs.Get(i);
            q->TraceConnectWithoutContext("Enqueue", MakeBoundCallback(&TraceEnq, w.str(), Ptr<const QueueDisc>(q)));
            q->TraceConnectWithoutContext("Drop", MakeBoundCallback(&TraceDrop, w.str(), Ptr<const QueueDisc>(q)));
            q->TraceConnectWithoutContext("Mark", MakeBoundCallback(&TraceMark, w.str(), Ptr<const QueueDisc>(q)));
        }
    }
    for (uint32_t s = 0; s < spines; ++s)
    {
        Ptr<LeafSpineRouting> r = DynamicCast<LeafSpineRouting>(
            spineNodes.Get(s)->GetObject<Ipv4>()->GetRoutingProtocol());
        r->Configure(LeafSpineRouting::SPINE, 0, hostsPerLeaf, nHosts, ecmpSeed, spineDown[s], {});
    }

    // ---- Receivers: one listening socket per destination host -------------
    std::vector<bool> listening(nHosts, false);
    for (const Flow& f : g_flows)
    {
        if (listening[f.dst])
        {
            continue;
        }
        listening[f.dst] = true;
        Ptr<Socket> ls = Socket::CreateSocket(hosts.Get(f.dst), TcpSocketFactory::GetTypeId());
        ls->Bind(InetSocketAddress(Ipv4Address::GetAny(), kSinkPort));
        ls->Listen();
        ls->SetAcceptCallback(MakeNullCallback<bool, Ptr<Socket>, const Address&>(),
                              MakeCallback(&OnAccept));
    }

    // ---- Senders ------------------------------------------------------------
    int64_t lastStartNs = 0;
    for (uint32_t i = 0; i < g_flows.size(); ++i)
    {
        Simulator::Schedule(NanoSeconds(g_flows[i].startNs), &StartFlow, i);
        lastStartNs = std::max(lastStartNs, g_flows[i].startNs);
    }
    if (stopS <= 0)
    {
        stopS = lastStartNs * 1e-9 + 10.0;
    }
    Simulator::Stop(Seconds(stopS));

    auto runStart = std::chrono::steady_clock::now();
    if (!g_flows.empty())
    {
        Simulator::Run();
    }
    auto runEnd = std::chrono::steady_clock::now();
    int64_t simEndNs = Simulator::Now().GetNanoSeconds();
    uint64_t events = Simulator::GetEventCount();
    uint64_t marks = 0;
    uint64_t drops = 0;
    uint64_t hostDrops = 0;
    for (uint32_t i = 0; i < qdiscs.GetN(); ++i)
    {
        const QueueDisc::Stats& st = qdiscs.Get(i)->GetStats();
        marks += st.nTotalMarkedPackets;
        drops += st.nTotalDroppedPackets;
        // The first 2 * nHosts queue discs are the host links', host side first.
        if (i < 2 * nHosts && i % 2 == 0)
        {
            hostDrops += st.nTotalDroppedPackets;
        }
    }

    // ---- Output -------------------------------------------------------------
    FILE* out = std::fopen(outPath.c_str(), "w");
    if (!out)
    {
        std::cerr << "cannot write " << outPath << "\n";
        return 1;
    }
    std::fprintf(out,
                 "# id src dst start_s size_bytes incast fct_ns ideal_ns slowdown "
                 "(fct_ns=-1: unfinished) | ns-3.44 dc_bench.cc leaves=%u hostsPerLeaf=%u "
                 "spines=%u rateGbps=%g delayNs=%u bufferBytes=%u hostBufferBytes=%u ecnK=%u redMode=%s "
                 "fctAt=%s sack=%d ecmp=%s ecmpSeed=%" PRIu64 " stopS=%g recovery=%s\n",
                 leaves, hostsPerLeaf, spines, rateGbps, delayNs, bufferBytes, hostBytes, ecnK,
                 redMode.c_str(), fctAt.c_str(), int(sack), g_ecmpMode.c_str(), ecmpSeed, stopS,
                 recovery.c_str());
    uint32_t finished = 0;
    const double baseRttNs = 8.0 * delayNs; // host-leaf-spine-leaf-host and back
    for (const Flow& f : g_flows)
    {
        int64_t end = g_fctAtSender ? f.ackDoneNs : f.rxDoneNs;
        int64_t fct = end >= 0 ? end - f.startNs : -1;
        double ideal = baseRttNs + double(f.size) * 8.0 / rateGbps;
        if (fct >= 0)
        {
            finished++;
            std::fprintf(out, "%u %u %u %s %" PRIu64 " %d %" PRId64 " %" PRId64 " %.6g\n", f.id,
                         f.src, f.dst, f.startStr.c_str(), f.size, f.incast, fct,
                         int64_t(std::floor(ideal)), double(fct) / ideal);
        }
        else
        {
            std::fprintf(out, "%u %u %u %s %" PRIu64 " %d -1 %" PRId64 " -1\n", f.id, f.src,
                         f.dst, f.startStr.c_str(), f.size, f.incast, int64_t(std::floor(ideal)));
        }
    }
    std::fclose(out);
    if (!flowStatsPath.empty())
    {
        FILE* fs = std::fopen(flowStatsPath.c_str(), "w");
        if (!fs)
        {
            std::cerr << "cannot write " << flowStatsPath << "\n";
            return 1;
        }
        std::fprintf(fs, "# id retx recoveries loss_episodes retx_open retx_disorder retx_cwr "
                         "retx_recovery retx_loss\n");
        for (const Flow& f : g_flows)
        {
            const uint32_t* r = f.retxByState;
            std::fprintf(fs, "%u %u %u %u %u %u %u %u %u\n", f.id, f.retx, f.recoveries,
                         f.lossEpisodes, r[TcpSocketState::CA_OPEN], r[TcpSocketState::CA_DISORDER],
                         r[TcpSocketState::CA_CWR], r[TcpSocketState::CA_RECOVERY],
                         r[TcpSocketState::CA_LOSS]);
        }
        std::fclose(fs);
    }
    Simulator::Destroy();
    if (g_trace)
    {
        std::fclose(g_trace);
    }

    auto wallEnd = std::chrono::steady_clock::now();
    double runS = std::chrono::duration<double>(runEnd - runStart).count();
    double totalS = std::chrono::duration<double>(wallEnd - wallStart).count();
    std::printf("flows=%zu finished=%u sim_end_s=%.9f events=%" PRIu64 " ecn_marks=%" PRIu64
                " drops=%" PRIu64 " host_drops=%" PRIu64 " retx=%" PRIu64 " recoveries=%" PRIu64
                " loss_episodes=%" PRIu64 " run_wall_s=%.3f total_wall_s=%.3f\n",
                g_flows.size(), finished, simEndNs * 1e-9, events, marks, drops, hostDrops, g_retx,
                g_recoveries, g_lossEpisodes, runS, totalS);
    return 0;
}
