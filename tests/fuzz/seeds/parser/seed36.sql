SUBSCRIBE "q with space"
