import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Properties;
import java.util.Set;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * Makes the broker's ACLs of the principals named in a spec file exactly those of the file.
 *
 * <p>deploy/local/kafka.sh runs it in Java's source-file mode with the broker's jars on the
 * class path (the Kafka distribution's kafka-acls.sh lives in kafka-tools, which is not fetched):
 *
 * <pre>java -cp 'libs/*' KafkaAcls.java BOOTSTRAP ADMIN_CLIENT_PROPERTIES SPEC</pre>
 *
 * <p>Each line of SPEC is {@code PRINCIPAL OPERATION RESOURCE_TYPE PATTERN_TYPE NAME}, e.g.
 * {@code User:registry READ TOPIC LITERAL discospace.spaces}: an ALLOW from any host. The
 * principals named in SPEC lose every ACL the file does not list (a topic prefix changed since
 * the last start, say); other principals are left alone. Running it twice changes nothing.
 */
public final class KafkaAcls {
  private KafkaAcls() {}

  public static void main(String[] args) throws Exception {
    if (args.length != 3) {
      System.err.println("usage: KafkaAcls BOOTSTRAP ADMIN_CLIENT_PROPERTIES SPEC");
      System.exit(2);
    }
    Properties client = new Properties();
    try (InputStream in = Files.newInputStream(Path.of(args[1]))) {
      client.load(in);
    }
    client.put("bootstrap.servers", args[0]);
    Set<AclBinding> wanted = read(Path.of(args[2]));
    Set<String> principals = new LinkedHashSet<>();
    wanted.forEach(binding -> principals.add(binding.entry().principal()));
    try (Admin admin = Admin.create(client)) {
      List<AclBindingFilter> stale = new ArrayList<>();
      for (AclBinding existing : admin.describeAcls(AclBindingFilter.ANY).values().get()) {
        if (principals.contains(existing.entry().principal()) && !wanted.contains(existing)) {
          stale.add(existing.toFilter());
        }
      }
      if (!stale.isEmpty()) {
        admin.deleteAcls(stale).all().get();
      }
      admin.createAcls(wanted).all().get();
      System.out.printf(
          "%d ACLs for %d principals (%d removed)%n", wanted.size(), principals.size(), stale.size());
    }
  }

  private static Set<AclBinding> read(Path spec) throws Exception {
    Set<AclBinding> bindings = new LinkedHashSet<>();
    for (String line : Files.readAllLines(spec)) {
      String text = line.strip();
      if (text.isEmpty() || text.startsWith("#")) {
        continue;
      }
      String[] field = text.split("\\s+");
      if (field.length != 5) {
        throw new IllegalArgumentException("an ACL line needs 5 fields: " + text);
      }
      ResourcePattern resource =
          new ResourcePattern(
              ResourceType.fromString(field[2]), field[4], PatternType.fromString(field[3]));
      AccessControlEntry entry =
          new AccessControlEntry(
              field[0], "*", AclOperation.fromString(field[1]), AclPermissionType.ALLOW);
      bindings.add(new AclBinding(resource, entry));
    }
    return bindings;
  }
}
