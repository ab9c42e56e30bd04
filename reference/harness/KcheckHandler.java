/** One kind of request the harness answers: the tokens of its line in, one answer line out ("OK ..."). */
public interface KcheckHandler {
    String handle(String[] tokens) throws Throwable;
}
