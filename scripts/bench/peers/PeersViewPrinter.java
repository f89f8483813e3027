// PeersViewPrinter joins a JGroups channel with the packaged udp.xml stack
// and prints one line per view it installs, for scripts/bench/peers.sh.
// It is compiled by that script with javac at run time against Debian's
// libjgroups-java (JGroups 2.12); no binary of it is kept.
//
//   java -cp jgroups.jar:CLASSES PeersViewPrinter NAME [CLUSTER]
//
// Every line on stdout is
//
//   UNIXSECONDS.MICROS view VIEWID COORD MEMBERS [merge]
//
// where VIEWID is the view's id (its creator and a counter, "n3|7"),
// COORD is the view's coordinator (its first member, as JGroups defines
// it), MEMBERS the comma-separated member names in view order, and "merge"
// marks a MergeView (the view that ends a partition). NAME is the logical
// name of this member (e.g. "n3"). Properties: peers.jgroups.config (default
// udp.xml, from the jar); JGroups' own (jgroups.bind_addr, ...) apply.
// SIGTERM closes the channel (a graceful leave).

import java.time.Instant;
import java.util.List;

import org.jgroups.Address;
import org.jgroups.JChannel;
import org.jgroups.MergeView;
import org.jgroups.ReceiverAdapter;
import org.jgroups.View;

public final class PeersViewPrinter {
    private PeersViewPrinter() {}

    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            System.err.println("usage: PeersViewPrinter NAME [CLUSTER]");
            System.exit(2);
        }
        final String name = args[0];
        final String cluster = args.length > 1 ? args[1] : "groupd-peers";
        final String config = System.getProperty("peers.jgroups.config", "udp.xml");
        final JChannel ch = new JChannel(config);
        ch.setName(name);
        ch.setReceiver(new ReceiverAdapter() {
            @Override
            public void viewAccepted(View v) {
                print(ch, v);
            }
        });
        Runtime.getRuntime().addShutdownHook(new Thread(ch::close));
        ch.connect(cluster);
        System.err.println("PeersViewPrinter: " + name + " joined " + cluster + " as " + ch.getAddress() + " with " + config);
        Thread.currentThread().join();
    }

    // print writes one view line; synchronized so that lines never mix.
    static synchronized void print(JChannel ch, View v) {
        Instant now = Instant.now();
        StringBuilder b = new StringBuilder(128);
        b.append(now.getEpochSecond()).append('.');
        String us = Long.toString(now.getNano() / 1000);
        for (int i = us.length(); i < 6; i++) {
            b.append('0');
        }
        b.append(us).append(" view ");
        b.append(nameOf(ch, v.getVid().getCoordAddress())).append('|').append(v.getVid().getId());
        List<Address> members = v.getMembers();
        b.append(' ').append(members.isEmpty() ? "-" : nameOf(ch, members.get(0))).append(' ');
        for (int i = 0; i < members.size(); i++) {
            if (i > 0) {
                b.append(',');
            }
            b.append(nameOf(ch, members.get(i)));
        }
        if (v instanceof MergeView) {
            b.append(" merge");
        }
        System.out.println(b);
        System.out.flush();
    }

    static String nameOf(JChannel ch, Address a) {
        String n = ch.getName(a);
        return (n == null || n.isEmpty()) ? String.valueOf(a) : n;
    }
}
