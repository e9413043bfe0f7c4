SELECT x FROM s WHERE (a OR b) AND (c OR d)
