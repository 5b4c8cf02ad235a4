package com.example.conductor;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;

import com.example.orders.OrderFulfillment;

/** The README's Java example (src/main/java/com/example/orders/OrderFulfillment.java), run as is. */
class ReadmeExampleTest {
    @Test
    void orderFulfillmentRuns() throws Exception {
        PrintStream stdout = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            OrderFulfillment.main(new String[0]);
        } finally {
            System.setOut(stdout);
        }
        String out = captured.toString(StandardCharsets.UTF_8);
        stdout.print(out);
        assertTrue(out.contains("Status: COMPLETED"), out);
        assertTrue(out.contains("TRACK-456") && out.contains("txn_abc123"), out);
    }
}
