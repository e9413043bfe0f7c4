CREATE STREAM bids (auction BIGINT, bidder BIGINT, price DOUBLE, channel TEXT, ts TIMESTAMP)
  WITH (timestamp = 'ts', watermark = '2 seconds', source = 'tcp://127.0.0.1:9100', format = 'csv')
