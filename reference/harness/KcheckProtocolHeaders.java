import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

import org.apache.kafka.clients.NodeApiVersions;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersion;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.requests.ApiVersionsRequest;
import org.apache.kafka.common.requests.ApiVersionsResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.ResponseHeader;

/**
 * Request and response headers and ApiVersions negotiation (kafka-clients: RequestHeader, ResponseHeader,
 * ApiKeys, ApiVersionsResponse, ApiVersionsRequest, NodeApiVersions). Strings travel as KcheckCodec text,
 * bytes as lowercase hex ('_' when empty); an exception answers '!' + its simple name (and its message as text).
 *
 * HDR_ENC apiKey apiVersion correlationId clientId
 *     new RequestHeader(ApiKeys.forId(apiKey), apiVersion, clientId, correlationId): its header version, size(),
 *     the bytes RequestHeaderData.write gives at that version, then toResponseHeader()'s version and bytes.
 *     Answer: OK hv size hex rhv rhex | OK !Name message
 * HDR_PARSE hex        RequestHeader.parse(ByteBuffer.wrap(bytes)).
 *     Answer: OK apiKey apiVersion correlationId clientId hv size supported tagged | OK !Name message causeName
 *     (supported = apiKey().isVersionSupported(apiVersion()); tagged = '~' or tag:hex,...)
 * HDR_RESP hex hv      ResponseHeader.parse(ByteBuffer.wrap(bytes), hv).  Answer: OK corr size tagged | OK !Name message
 * HDR_VERSIONS apiKey v,v,...   ApiKeys.forId(apiKey): name oldest latest(true) latest(false) listeners, then
 *     requestHeaderVersion:responseHeaderVersion for each v (each side a number or !Name).
 * APIVER_ADV listener unstable telemetry   ApiVersionsResponse.filterApis for that listener (3.9: with RecordVersion
 *     V2, which every KRaft metadata version has).  Answer: OK k:min:max ... (in the collection's order) | OK ~
 * APIVER_USE ads query,...   a NodeApiVersions of the ads (k:min:max,... or ~; no features); a query k:lo:hi is
 *     latestUsableVersion(ApiKeys.forId(k), lo, hi), k:d is latestUsableVersion(ApiKeys.forId(k)).
 *     Answer: OK answer ... (a version or !Name:message)
 * APIVER_X k:min:max k:min:max   ApiVersionsResponse.intersect.  Answer: OK none | OK k:min:max | OK !Name:message
 * APIVER_REQ version name softwareVersion   the broker's first look at an ApiVersions request: unsupported
 *     (!API_VERSIONS.isVersionSupported(version)); if so the v0 error response (RequestContext.parseRequest and
 *     ApiVersionsRequest.getErrorResponse with UNSUPPORTED_VERSION) else whether the request is valid (isValid()).
 *     Answer: OK 1 errorCode k:min:max... | OK 0 valid(0|1)
 */
public final class KcheckProtocolHeaders {
    private static final char[] HEX = "0123456789abcdef".toCharArray();
    private static Method filterApis;
    private static Object recordVersionV2;
    private static Constructor<?> nodeApiVersions;

    private KcheckProtocolHeaders() {
    }

    public static void register(Map<String, KcheckHandler> table) throws ReflectiveOperationException {
        for (Method m : ApiVersionsResponse.class.getMethods()) {
            if (m.getName().equals("filterApis")) filterApis = m;
        }
        if (filterApis.getParameterCount() == 4) {  // 3.9: filterApis(RecordVersion, ListenerType, boolean, boolean)
            Class<?> rv = Class.forName("org.apache.kafka.common.record.RecordVersion");
            recordVersionV2 = rv.getField("V2").get(null);
        }
        for (Constructor<?> c : NodeApiVersions.class.getConstructors()) {
            Class<?>[] p = c.getParameterTypes();
            if (p.length >= 2 && p.length <= 3 && p[1] == Collection.class
                    && (nodeApiVersions == null || p.length < nodeApiVersions.getParameterCount())) nodeApiVersions = c;
        }
        table.put("HDR_ENC", KcheckProtocolHeaders::encode);
        table.put("HDR_PARSE", KcheckProtocolHeaders::parse);
        table.put("HDR_RESP", KcheckProtocolHeaders::parseResponse);
        table.put("HDR_VERSIONS", KcheckProtocolHeaders::versions);
        table.put("APIVER_ADV", KcheckProtocolHeaders::advertised);
        table.put("APIVER_USE", KcheckProtocolHeaders::usable);
        table.put("APIVER_X", KcheckProtocolHeaders::intersect);
        table.put("APIVER_REQ", KcheckProtocolHeaders::apiVersionsRequest);
    }

    static String hex(byte[] b) {
        if (b.length == 0) return "_";
        char[] out = new char[2 * b.length];
        for (int i = 0; i < b.length; i++) {
            out[2 * i] = HEX[(b[i] >> 4) & 15];
            out[2 * i + 1] = HEX[b[i] & 15];
        }
        return new String(out);
    }

    static byte[] unhex(String s) {
        if (s.equals("_")) return new byte[0];
        byte[] b = new byte[s.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(s.substring(2 * i, 2 * i + 2), 16);
        return b;
    }

    private static String failure(Throwable e) {
        return "!" + e.getClass().getSimpleName() + " " + KcheckCodec.encodeText(e.getMessage());
    }

    private static String encode(String[] t) {
        try {
            ApiKeys key = ApiKeys.forId(Integer.parseInt(t[1]));
            RequestHeader h = new RequestHeader(key, Short.parseShort(t[2]), KcheckCodec.text(t[4]),
                                                Integer.parseInt(t[3]));
            int size = h.size();
            ObjectSerializationCache cache = new ObjectSerializationCache();
            ByteBuffer buf = ByteBuffer.allocate(h.data().size(cache, h.headerVersion()));
            h.data().write(new ByteBufferAccessor(buf), cache, h.headerVersion());
            ResponseHeader r = h.toResponseHeader();
            ObjectSerializationCache rcache = new ObjectSerializationCache();
            ByteBuffer rbuf = ByteBuffer.allocate(r.data().size(rcache, r.headerVersion()));
            r.data().write(new ByteBufferAccessor(rbuf), rcache, r.headerVersion());
            return "OK " + h.headerVersion() + " " + size + " " + hex(buf.array()) + " " + r.headerVersion() + " "
                + hex(rbuf.array());
        } catch (RuntimeException e) {
            return "OK " + failure(e);
        }
    }

    private static String tagged(List<RawTaggedField> fields) {
        if (fields == null || fields.isEmpty()) return "~";
        StringBuilder b = new StringBuilder();
        for (RawTaggedField f : fields) {
            if (b.length() > 0) b.append(',');
            b.append(f.tag()).append(':').append(hex(f.data()));
        }
        return b.toString();
    }

    private static String parse(String[] t) {
        ByteBuffer buf = ByteBuffer.wrap(unhex(t[1]));
        try {
            RequestHeader h = RequestHeader.parse(buf);
            return "OK " + h.data().requestApiKey() + " " + h.apiVersion() + " " + h.correlationId() + " "
                + KcheckCodec.encodeText(h.clientId()) + " " + h.headerVersion() + " " + h.size() + " "
                + (h.apiKey().isVersionSupported(h.apiVersion()) ? 1 : 0) + " " + tagged(h.data().unknownTaggedFields());
        } catch (RuntimeException e) {
            Throwable cause = e.getCause();
            return "OK " + failure(e) + " " + (cause == null ? "-" : cause.getClass().getSimpleName());
        }
    }

    private static String parseResponse(String[] t) {
        ByteBuffer buf = ByteBuffer.wrap(unhex(t[1]));
        try {
            ResponseHeader h = ResponseHeader.parse(buf, Short.parseShort(t[2]));
            return "OK " + h.correlationId() + " " + h.size() + " " + tagged(h.data().unknownTaggedFields());
        } catch (RuntimeException e) {
            return "OK " + failure(e);
        }
    }

    private static String side(ShortOp op) {
        try {
            return Short.toString(op.get());
        } catch (RuntimeException e) {
            return "!" + e.getClass().getSimpleName();
        }
    }

    private interface ShortOp {
        short get();
    }

    private static String versions(String[] t) {
        ApiKeys key;
        try {
            key = ApiKeys.forId(Integer.parseInt(t[1]));
        } catch (RuntimeException e) {
            return "OK " + failure(e);
        }
        TreeSet<String> listeners = new TreeSet<>();
        for (ApiMessageType.ListenerType l : key.messageType.listeners()) listeners.add(l.name());
        StringBuilder out = new StringBuilder("OK ").append(key.name.replace(' ', '_')).append(' ')
            .append(key.oldestVersion()).append(' ').append(key.latestVersion()).append(' ')
            .append(key.latestVersion(false)).append(' ')
            .append(listeners.isEmpty() ? "~" : String.join(",", listeners));
        for (int v : KcheckCodec.ints(t[2])) {
            short s = (short) v;
            out.append(' ').append(side(() -> key.requestHeaderVersion(s))).append(':')
               .append(side(() -> key.responseHeaderVersion(s)));
        }
        return out.toString();
    }

    private static void appendVersions(StringBuilder out, Iterable<ApiVersion> versions) {
        int before = out.length();
        for (ApiVersion v : versions) {
            out.append(' ').append(v.apiKey()).append(':').append(v.minVersion()).append(':').append(v.maxVersion());
        }
        if (out.length() == before) out.append(" ~");
    }

    private static String advertised(String[] t) throws ReflectiveOperationException {
        ApiMessageType.ListenerType listener = ApiMessageType.ListenerType.valueOf(t[1]);
        boolean unstable = t[2].equals("1");
        boolean telemetry = t[3].equals("1");
        Object apis = recordVersionV2 == null ? filterApis.invoke(null, listener, unstable, telemetry)
            : filterApis.invoke(null, recordVersionV2, listener, unstable, telemetry);
        StringBuilder out = new StringBuilder("OK");
        @SuppressWarnings("unchecked")
        Iterable<ApiVersion> versions = (Iterable<ApiVersion>) apis;
        appendVersions(out, versions);
        return out.toString();
    }

    private static ApiVersion apiVersion(String tok) {
        String[] f = tok.split(":");
        return new ApiVersion().setApiKey(Short.parseShort(f[0])).setMinVersion(Short.parseShort(f[1]))
            .setMaxVersion(Short.parseShort(f[2]));
    }

    private static String usable(String[] t) throws ReflectiveOperationException {
        List<ApiVersion> ads = new ArrayList<>();
        if (!t[1].equals("~")) for (String a : t[1].split(",")) ads.add(apiVersion(a));
        NodeApiVersions node = (NodeApiVersions) (nodeApiVersions.getParameterCount() == 2
            ? nodeApiVersions.newInstance(ads, Collections.emptyList())
            : nodeApiVersions.newInstance(ads, Collections.emptyList(), false));
        StringBuilder out = new StringBuilder("OK");
        for (String q : t[2].split(",")) {
            String[] f = q.split(":");
            out.append(' ');
            try {
                ApiKeys key = ApiKeys.forId(Integer.parseInt(f[0]));
                short v = f[1].equals("d") ? node.latestUsableVersion(key)
                    : node.latestUsableVersion(key, Short.parseShort(f[1]), Short.parseShort(f[2]));
                out.append(v);
            } catch (RuntimeException e) {
                out.append('!').append(e.getClass().getSimpleName()).append(':')
                   .append(KcheckCodec.encodeText(e.getMessage()));
            }
        }
        return out.toString();
    }

    private static String intersect(String[] t) {
        try {
            Optional<ApiVersion> v = ApiVersionsResponse.intersect(apiVersion(t[1]), apiVersion(t[2]));
            if (v.isEmpty()) return "OK none";
            return "OK " + v.get().apiKey() + ":" + v.get().minVersion() + ":" + v.get().maxVersion();
        } catch (RuntimeException e) {
            return "OK !" + e.getClass().getSimpleName() + ":" + KcheckCodec.encodeText(e.getMessage());
        }
    }

    private static String apiVersionsRequest(String[] t) {
        short version = Short.parseShort(t[1]);
        if (!ApiKeys.API_VERSIONS.isVersionSupported(version)) {
            ApiVersionsRequest req = new ApiVersionsRequest(new ApiVersionsRequestData(), (short) 0, version);
            ApiVersionsResponseData data = req.getErrorResponse(0, new UnsupportedVersionException("unsupported")).data();
            StringBuilder out = new StringBuilder("OK 1 ").append(data.errorCode());
            appendVersions(out, data.apiKeys());
            return out.toString();
        }
        ApiVersionsRequestData data = new ApiVersionsRequestData().setClientSoftwareName(KcheckCodec.text(t[2]))
            .setClientSoftwareVersion(KcheckCodec.text(t[3]));
        return "OK 0 " + (new ApiVersionsRequest(data, version).isValid() ? 1 : 0);
    }
}
